package claimguard

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
)

const (
	mrFinalizer = "finalizer.managedresource.crossplane.io"
	xrFinalizer = "composite.apiextensions.crossplane.io"
	retryClaim  = " A new claim would compose new resources with the same external names while the old ones are still deleting theirs."
)

// The standard scenario: claim default/db was deleted with Foreground; its
// XR db-x7k2p waits for two composed resources, one already deleting.
var (
	oldXR = xr("db-x7k2p", claimLabels("default", "db"), deletingSince(3*time.Minute), finalizers(foregroundFinalizer, xrFinalizer),
		resourceRefs(false,
			map[string]any{"apiVersion": "database.aws.example.org/v1beta1", "kind": "RDSInstance", "name": "db-x7k2p-abcde"},
			map[string]any{"apiVersion": "postgresql.sql.example.org/v1alpha1", "kind": "Role", "name": "db-x7k2p-fghij"}))
	oldRDS = mr("db-x7k2p-abcde", composedByPG("db-x7k2p"), claimLabels("default", "db"), externalName("db"),
		deletingSince(3*time.Minute), finalizers(mrFinalizer))
	oldRole = mr("db-x7k2p-fghij", composedByPG("db-x7k2p"), claimLabels("default", "db"), externalName("db-user"), finalizers(mrFinalizer))

	heldByTwo = `is still held by 2 composed resources: RDSInstance db-x7k2p-abcde (external name "db"; deleting for 3m0s; finalizers: finalizer.managedresource.crossplane.io); ` +
		`Role db-x7k2p-fghij (external name "db-user"; finalizers: finalizer.managedresource.crossplane.io)`
)

// standard is the cluster of the standard scenario, with extra XRs.
func standard(xrs ...*object) *cluster {
	return newCluster().
		xrd(pgXRD, pgXRGVR, false, stateSynced, append([]*object{oldXR}, xrs...)...).
		managed(rdsGK, rdsGVR, false, stateSynced, oldRDS).
		managed(userGK, userGVR, false, stateSynced, oldRole)
}

func handle(r *Rule, rq admission.Request) admission.Response {
	return ruletest.Judge(context.Background(), r, rq)
}

func TestClaimCreate(t *testing.T) {
	create := func(name string, mods ...mod) admission.Request {
		return admissiontest.Create(pgClaimGVR, "PostgreSQLInstance", req(name, append([]mod{inNamespace("default")}, mods...)...)).Build()
	}
	manyComposed := newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced,
		xr("db-x7k2p", claimLabels("default", "db"), deletingSince(3*time.Minute), finalizers(foregroundFinalizer)))
	var many []*object
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		many = append(many, mr("db-x7k2p-"+n, composedByPG("db-x7k2p"), finalizers(mrFinalizer)))
	}
	manyComposed.managed(rdsGK, rdsGVR, false, stateSynced, many...)

	cases := map[string]struct {
		reason string
		rule   *Rule
		req    admission.Request
		want   admission.Response
	}{
		"NoCompositeOfTheClaimIsAllowed": {
			reason: "A claim whose namespace and name no XR carries has nothing to collide with.",
			rule:   standard().defaults(),
			req:    create("web"),
			want:   admission.Allowed(""),
		},
		"TerminatingCompositeOfTheClaimIsDenied": {
			reason: "The previous XR of default/db is still deleting; the message names it, how long, and what holds it, with finalizers.",
			rule:   standard().defaults(),
			req:    create("db"),
			want: admission.Denied("claimguard: PostgreSQLInstance default/db cannot be created yet: XPostgreSQLInstance db-x7k2p, the composite resource of the previous claim default/db, " +
				"has been deleting for 3m0s and " + heldByTwo + "." + retryClaim +
				" Retry once XPostgreSQLInstance db-x7k2p is gone (kubectl get xpostgresqlinstances.database.example.org db-x7k2p)."),
		},
		"DryRunGetsTheSameAnswer": {
			reason: "A server-side dry run must show what the real create would get.",
			rule:   standard().defaults(),
			req:    admissiontest.Create(pgClaimGVR, "PostgreSQLInstance", req("db", inNamespace("default"))).DryRun().Build(),
			want: admission.Denied("claimguard: PostgreSQLInstance default/db cannot be created yet: XPostgreSQLInstance db-x7k2p, the composite resource of the previous claim default/db, " +
				"has been deleting for 3m0s and " + heldByTwo + "." + retryClaim +
				" Retry once XPostgreSQLInstance db-x7k2p is gone (kubectl get xpostgresqlinstances.database.example.org db-x7k2p)."),
		},
		"SameNameInAnotherNamespaceIsAllowed": {
			reason: "Claims are namespaced: team-b/db is a different claim from default/db.",
			rule:   standard().defaults(),
			req:    admissiontest.Create(pgClaimGVR, "PostgreSQLInstance", req("db", inNamespace("team-b"))).Build(),
			want:   admission.Allowed(""),
		},
		"LiveCompositeOfTheClaimIsAllowed": {
			reason: "An XR that is not being deleted is not a predecessor being torn down (an orphaned XR is re-bound by Crossplane).",
			rule:   newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced, xr("db-live1", claimLabels("default", "db"))).defaults(),
			req:    create("db"),
			want:   admission.Allowed(""),
		},
		"CompositeLinkedByClaimRefOnlyIsFound": {
			reason: "v1 XRs link to their claim with spec.claimRef; the labels may be missing.",
			rule: newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced,
				xr("db-r3f", claimRef("default", "db"), deletingSince(time.Minute), finalizers(xrFinalizer))).defaults(),
			req: create("db"),
			want: admission.Denied("claimguard: PostgreSQLInstance default/db cannot be created yet: XPostgreSQLInstance db-r3f, the composite resource of the previous claim default/db, " +
				"has been deleting for 1m0s and is held by its finalizers composite.apiextensions.crossplane.io." + retryClaim +
				" Retry once XPostgreSQLInstance db-r3f is gone (kubectl get xpostgresqlinstances.database.example.org db-r3f)."),
		},
		"AtMostFiveComposedResourcesAreNamed": {
			reason: "A message lists five composed resources and counts the rest.",
			rule:   manyComposed.defaults(),
			req:    create("db"),
			want: admission.Denied("claimguard: PostgreSQLInstance default/db cannot be created yet: XPostgreSQLInstance db-x7k2p, the composite resource of the previous claim default/db, " +
				"has been deleting for 3m0s and is still held by 7 composed resources: " +
				"RDSInstance db-x7k2p-a (finalizers: finalizer.managedresource.crossplane.io); RDSInstance db-x7k2p-b (finalizers: finalizer.managedresource.crossplane.io); " +
				"RDSInstance db-x7k2p-c (finalizers: finalizer.managedresource.crossplane.io); RDSInstance db-x7k2p-d (finalizers: finalizer.managedresource.crossplane.io); " +
				"RDSInstance db-x7k2p-e (finalizers: finalizer.managedresource.crossplane.io); and 2 more." + retryClaim +
				" Retry once XPostgreSQLInstance db-x7k2p is gone (kubectl get xpostgresqlinstances.database.example.org db-x7k2p)."),
		},
		"UncachedComposedKindIsNamedFromResourceRefs": {
			reason: "A composed resource of a kind Steward does not cache is still named, from spec.resourceRefs.",
			rule: newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced,
				xr("db-x7k2p", claimLabels("default", "db"), deletingSince(3*time.Minute), finalizers(foregroundFinalizer),
					resourceRefs(false, map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "name": "db-x7k2p-conf"}))).
				defaults(),
			req: create("db"),
			want: admission.Denied("claimguard: PostgreSQLInstance default/db cannot be created yet: XPostgreSQLInstance db-x7k2p, the composite resource of the previous claim default/db, " +
				"has been deleting for 3m0s and is still held by 1 composed resource: Object db-x7k2p-conf (a kind Steward does not cache; it may already be gone)." + retryClaim +
				" Retry once XPostgreSQLInstance db-x7k2p is gone (kubectl get xpostgresqlinstances.database.example.org db-x7k2p)."),
		},
		"SeveralTerminatingCompositesNameTheOldestAndCountTheRest": {
			reason: "Two XRs of the claim deleting (the claim was re-created and deleted twice): the oldest is named.",
			rule:   standard(xr("db-zz9", claimLabels("default", "db"), deletingSince(time.Minute), finalizers(xrFinalizer))).defaults(),
			req:    create("db"),
			want: admission.Denied("claimguard: PostgreSQLInstance default/db cannot be created yet: XPostgreSQLInstance db-x7k2p, the composite resource of the previous claim default/db, " +
				"has been deleting for 3m0s and " + heldByTwo + " (1 more composite resource of this claim is deleting too)." + retryClaim +
				" Retry once XPostgreSQLInstance db-x7k2p is gone (kubectl get xpostgresqlinstances.database.example.org db-x7k2p)."),
		},
		"ComposedResourcesLeftByABackgroundDeleteAreDenied": {
			reason: "With Background deletion the XR is gone at once while its MRs still delete their external resources; a new claim would collide with them.",
			rule: newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced).
				managed(rdsGK, rdsGVR, false, stateSynced, oldRDS).defaults(),
			req: create("db"),
			want: admission.Denied(`claimguard: PostgreSQLInstance default/db cannot be created yet: 1 resource composed for the previous claim default/db is still being deleted: ` +
				`RDSInstance db-x7k2p-abcde (external name "db"; deleting for 3m0s; finalizers: finalizer.managedresource.crossplane.io).` + retryClaim +
				" Retry once they are gone (kubectl get managed -l crossplane.io/claim-namespace=default,crossplane.io/claim-name=db)."),
		},
		"LeftoversOfAnotherClaimKindWithTheSameNameAreAllowed": {
			reason: "Claim labels carry no kind: a deleting MR of a Bucket claim default/db must not block a PostgreSQLInstance default/db.",
			rule: newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced).
				managed(rdsGK, rdsGVR, false, stateSynced, mr("db-b7-s3", ownedBy("storage.example.org/v1", "XBucket", "db-b7"),
					claimLabels("default", "db"), deletingSince(time.Minute), finalizers(mrFinalizer))).defaults(),
			req:  create("db"),
			want: admission.Allowed(""),
		},
		"CompositeCacheSyncingIsAnError": {
			reason: "An unsynced cache never answers: the request errs and the failure policy (Fail) decides.",
			rule:   newCluster().xrd(pgXRD, pgXRGVR, false, stateSyncing).defaults(),
			req:    create("db"),
			want:   admission.Errored(http.StatusServiceUnavailable, errString("the cache of xpostgresqlinstances.database.example.org has not synced yet; retry shortly")),
		},
		"CompositeKindSteWardMayNotListIsAllowedWithAWarning": {
			reason: "Without RBAC for the XR kind nothing can be checked; the request passes with a warning (counted as warned).",
			rule:   newCluster().xrd(pgXRD, pgXRGVR, false, stateForbidden).defaults(),
			req:    create("db"),
			want: admission.Allowed("").WithWarnings("claimguard could not check this request: Steward may not list xpostgresqlinstances.database.example.org " +
				"(grant list and watch through a ClusterRole labelled steward.dev/aggregate-to-claimguard=true)"),
		},
		"UnsyncedManagedKindIsNamedInAWarning": {
			reason: "The leftover search spans every managed kind; one it could not search is named, never silently skipped.",
			rule: newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced).
				managed(rdsGK, rdsGVR, false, stateSyncing).defaults(),
			req: create("db"),
			want: admission.Allowed("").WithWarnings("claimguard could not search rdsinstances.database.aws.example.org (its cache has not synced yet) for resources still being deleted; " +
				"this request was allowed without that part of the check"),
		},
		"MissingCompositeCacheIsAllowedWithAWarning": {
			reason: "A claim kind whose XR kind is not served has nothing to check against, and says so.",
			rule: func() *Rule {
				c := newCluster()
				c.s.claims[pgXRD.claimGK()] = pgXRD
				c.s.xrds[pgXRD.compositeGK()] = pgXRD
				return c.defaults()
			}(),
			req:  create("db"),
			want: admission.Allowed("").WithWarnings("claimguard does not cache xpostgresqlinstances.database.example.org and could not check this request"),
		},
		"MalformedObjectIsAnError": {
			reason: "A body that is not an object cannot be judged.",
			rule:   standard().defaults(),
			req:    admissiontest.Create(pgClaimGVR, "PostgreSQLInstance", []byte(`[1,2]`)).Namespace("default").Build(),
			want:   admission.Errored(http.StatusBadRequest, errString("decoding the object: object is an array, not a JSON object")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := handle(tc.rule, tc.req)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nHandle(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }
