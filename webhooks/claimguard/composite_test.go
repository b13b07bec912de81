package claimguard

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
)

// The v2 scenario: a namespaced XApp default/db deleted by a GitOps tool.
var (
	oldApp = xr("db", inNamespace("default"), deletingSince(2*time.Minute), finalizers(foregroundFinalizer, xrFinalizer),
		resourceRefs(true, map[string]any{"apiVersion": "database.aws.m.example.org/v1beta1", "kind": "RDSInstance", "name": "db-q8w2z"}))
	oldAppRDS = mr("db-q8w2z", inNamespace("default"), ownedBy("platform.example.org/v1", "XApp", "db"), externalName("db"),
		deletingSince(2*time.Minute), finalizers(mrFinalizer))
)

func TestCompositeCreate(t *testing.T) {
	createPG := func(name string, mods ...mod) admission.Request {
		return admissiontest.Create(pgXRGVR, "XPostgreSQLInstance", req(name, mods...)).User("system:serviceaccount:crossplane-system:crossplane").Build()
	}
	createApp := func(ns, name string) admission.Request {
		return admissiontest.Create(appGVR, "XApp", req(name, inNamespace(ns))).Build()
	}
	cases := map[string]struct {
		reason string
		rule   *Rule
		req    admission.Request
		want   admission.Response
	}{
		"CompositeOfAClaimWhilePredecessorDeletesIsDenied": {
			reason: "The claim controller's create of a new XR for default/db is refused while the old one deletes, so the claim's events carry the reason.",
			rule:   standard().defaults(),
			req:    createPG("db-n3w11", claimLabels("default", "db")),
			want: admission.Denied("claimguard: XPostgreSQLInstance db-n3w11 for claim default/db cannot be created yet: XPostgreSQLInstance db-x7k2p of the same claim " +
				"has been deleting for 3m0s and " + heldByTwo + ". A new composite resource would compose new resources with the same external names while the old ones are still deleting theirs. " +
				"Retry once XPostgreSQLInstance db-x7k2p is gone (kubectl get xpostgresqlinstances.database.example.org db-x7k2p)."),
		},
		"CompositeOfAClaimLinkedByClaimRefIsDenied": {
			reason: "spec.claimRef links a v1 XR to its claim as well as the labels do.",
			rule:   standard().defaults(),
			req:    createPG("db-n3w11", claimRef("default", "db")),
			want: admission.Denied("claimguard: XPostgreSQLInstance db-n3w11 for claim default/db cannot be created yet: XPostgreSQLInstance db-x7k2p of the same claim " +
				"has been deleting for 3m0s and " + heldByTwo + ". A new composite resource would compose new resources with the same external names while the old ones are still deleting theirs. " +
				"Retry once XPostgreSQLInstance db-x7k2p is gone (kubectl get xpostgresqlinstances.database.example.org db-x7k2p)."),
		},
		"CompositeOfAnotherClaimIsAllowed": {
			reason: "Only XRs of the same claim collide.",
			rule:   standard().defaults(),
			req:    createPG("web-1a2b3", claimLabels("default", "web")),
			want:   admission.Allowed(""),
		},
		"CompositeWithGenerateNameOnlyIsAllowed": {
			reason: "Without a name there is no predecessor by name to find.",
			rule:   standard().defaults(),
			req:    admissiontest.Create(pgXRGVR, "XPostgreSQLInstance", map[string]any{"metadata": map[string]any{"generateName": "web-"}}).Build(),
			want:   admission.Allowed(""),
		},
		"V2CompositeWithTheNameOfADeletingOneIsDenied": {
			reason: "A GitOps tool re-creating XApp default/db while the old one waits for its composed resources is told what it waits for (instead of AlreadyExists).",
			rule: newCluster().xrd(appXRD, appGVR, true, stateSynced, oldApp).
				managed(nsRDSGK, nsRDSGVR, true, stateSynced, oldAppRDS).defaults(),
			req: createApp("default", "db"),
			want: admission.Denied(`claimguard: XApp default/db cannot be created yet: the previous XApp default/db has been deleting for 2m0s and is still held by 1 composed resource: ` +
				`RDSInstance default/db-q8w2z (external name "db"; deleting for 2m0s; finalizers: finalizer.managedresource.crossplane.io). ` +
				"Retry once it is gone (kubectl get xapps.platform.example.org -n default db)."),
		},
		"V2CompositeWithTheNameOfALiveOneIsLeftToTheAPIServer": {
			reason: "The API server answers AlreadyExists; there is nothing being deleted to explain.",
			rule:   newCluster().xrd(appXRD, appGVR, true, stateSynced, xr("db", inNamespace("default"))).defaults(),
			req:    createApp("default", "db"),
			want:   admission.Allowed(""),
		},
		"V2CompositeWhosePredecessorsResourcesStillDeleteIsDenied": {
			reason: "After a Background delete the XR is gone but its composed resources still delete their external resources; a new XApp default/db would collide.",
			rule: newCluster().xrd(appXRD, appGVR, true, stateSynced).
				managed(nsRDSGK, nsRDSGVR, true, stateSynced, oldAppRDS).defaults(),
			req: createApp("default", "db"),
			want: admission.Denied(`claimguard: XApp default/db cannot be created yet: 1 resource composed by the previous XApp default/db is still being deleted or awaiting garbage collection: ` +
				`RDSInstance default/db-q8w2z (external name "db"; deleting for 2m0s; finalizers: finalizer.managedresource.crossplane.io). ` +
				"A new XApp would compose new resources with the same external names while the old ones are still deleting theirs. Retry once they are gone."),
		},
		"V2CompositeInAnotherNamespaceIsAllowed": {
			reason: "Namespaced XRs compose into their own namespace; team-b/db has no predecessor.",
			rule: newCluster().xrd(appXRD, appGVR, true, stateSynced).
				managed(nsRDSGK, nsRDSGVR, true, stateSynced, oldAppRDS).defaults(),
			req:  createApp("team-b", "db"),
			want: admission.Allowed(""),
		},
		"LeftoversOfAnotherKindWithTheSameNameAreAllowed": {
			reason: "The owner reference names the kind: resources of a deleted XBucket db do not block an XApp db.",
			rule: newCluster().xrd(appXRD, appGVR, true, stateSynced).
				managed(nsRDSGK, nsRDSGVR, true, stateSynced, mr("db-s3", inNamespace("default"), ownedBy("storage.example.org/v1", "XBucket", "db"), deletingSince(time.Minute))).defaults(),
			req:  createApp("default", "db"),
			want: admission.Allowed(""),
		},
		"CompositeCacheSyncingIsAnError": {
			reason: "An unsynced XR cache never answers.",
			rule:   newCluster().xrd(appXRD, appGVR, true, stateSyncing).defaults(),
			req:    createApp("default", "db"),
			want:   admission.Errored(http.StatusServiceUnavailable, errString("the cache of xapps.platform.example.org has not synced yet; retry shortly")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, handle(tc.rule, tc.req)); diff != "" {
				t.Errorf("%s\nHandle(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestManagedCreate(t *testing.T) {
	create := func(name string, mods ...mod) admission.Request {
		return admissiontest.Create(rdsGVR, "RDSInstance", req(name, mods...)).User("system:serviceaccount:crossplane-system:crossplane").Build()
	}
	twoDeleting := newCluster().managed(rdsGK, rdsGVR, false, stateSynced, oldRDS,
		mr("db-older", externalName("db"), deletingSince(time.Hour), finalizers(mrFinalizer)))
	cases := map[string]struct {
		reason string
		rule   *Rule
		req    admission.Request
		want   admission.Response
	}{
		"SameKindAndExternalNameAsADeletingOneIsDenied": {
			reason: "Two RDSInstances named db externally: one would create or adopt the database the other deletes.",
			rule:   standard().defaults(),
			req:    create("db-n3w11-xyz", composedByPG("db-n3w11"), externalName("db")),
			want: admission.Denied(`claimguard: RDSInstance db-n3w11-xyz with external name "db" cannot be created yet: RDSInstance db-x7k2p-abcde ` +
				`(deleting for 3m0s; finalizers: finalizer.managedresource.crossplane.io; composed by XPostgreSQLInstance db-x7k2p for claim default/db) ` +
				`has the same external name and still manages that external resource; a second RDSInstance would create or adopt it while the first deletes it. ` +
				"Retry once RDSInstance db-x7k2p-abcde is gone (kubectl get rdsinstances.database.aws.example.org db-x7k2p-abcde)."),
		},
		"SeveralDeletingWithTheSameExternalNameAreCounted": {
			reason: "The oldest deletion is named and the others counted.",
			rule:   twoDeleting.defaults(),
			req:    create("db-n3w11-xyz", externalName("db")),
			want: admission.Denied(`claimguard: RDSInstance db-n3w11-xyz with external name "db" cannot be created yet: RDSInstance db-older ` +
				`(deleting for 1h0m0s; finalizers: finalizer.managedresource.crossplane.io) has the same external name and still manages that external resource (1 more RDSInstance with this external name is deleting too); ` +
				`a second RDSInstance would create or adopt it while the first deletes it. ` +
				"Retry once RDSInstance db-older is gone (kubectl get rdsinstances.database.aws.example.org db-older)."),
		},
		"SameExternalNameAsALiveOneIsAllowed": {
			reason: "Only a deletion in flight destroys what the new resource points at; two live ones are the provider's business.",
			rule:   standard().defaults(),
			req:    create("db-n3w11-xyz", externalName("db-user")),
			want:   admission.Allowed(""),
		},
		"SameExternalNameOfAnotherKindIsAllowed": {
			reason: "External names are unique per kind: a Role named db is not the database db.",
			rule:   standard().defaults(),
			req:    admissiontest.Create(userGVR, "Role", req("db-role", externalName("db"))).Build(),
			want:   admission.Allowed(""),
		},
		"NoExternalNameIsAllowed": {
			reason: "Without crossplane.io/external-name the provider names the resource after the object, which is unique.",
			rule:   standard().defaults(),
			req:    create("db-n3w11-xyz"),
			want:   admission.Allowed(""),
		},
		"KindOutsideTheManagedCategoryIsAllowed": {
			reason: "A composed ConfigMap that happens to carry an external name is not a managed resource.",
			rule:   standard().defaults(),
			req:    admissiontest.Create(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ConfigMap", req("conf", inNamespace("default"), externalName("db"))).Build(),
			want:   admission.Allowed("ConfigMap is not a managed resource kind (no CRD in the managed category)"),
		},
		"ManagedCacheSyncingIsAnError": {
			reason: "An unsynced cache never answers; the failure policy decides.",
			rule:   newCluster().managed(rdsGK, rdsGVR, false, stateSyncing).defaults(),
			req:    create("db-n3w11-xyz", externalName("db")),
			want:   admission.Errored(http.StatusServiceUnavailable, errString("the cache of rdsinstances.database.aws.example.org has not synced yet; retry shortly")),
		},
		"ManagedKindStewardMayNotListIsAllowedWithAWarning": {
			reason: "Missing RBAC for a provider's kinds is visible on every request until fixed.",
			rule:   newCluster().managed(rdsGK, rdsGVR, false, stateForbidden).defaults(),
			req:    create("db-n3w11-xyz", externalName("db")),
			want: admission.Allowed("").WithWarnings("claimguard could not check this request: Steward may not list rdsinstances.database.aws.example.org " +
				"(grant list and watch through a ClusterRole labelled steward.dev/aggregate-to-claimguard=true)"),
		},
		"NestedCompositeIsJudgedAsAComposite": {
			reason: "A composed XR reaches both entries; it is checked as an XR (by name and claim), not by external name.",
			rule:   standard().defaults(),
			req:    createPG("db-n3w11-nested", composedByPG("db-n3w11"), externalName("db")),
			want:   admission.Allowed(""),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, handle(tc.rule, tc.req)); diff != "" {
				t.Errorf("%s\nHandle(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func createPG(name string, mods ...mod) admission.Request {
	return admissiontest.Create(pgXRGVR, "XPostgreSQLInstance", req(name, mods...)).Build()
}

func TestDelete(t *testing.T) {
	deleteClaim := func(mods ...mod) admission.Request {
		return admissiontest.Delete(pgClaimGVR, "PostgreSQLInstance", req("db", append([]mod{inNamespace("default")}, mods...)...)).Build()
	}
	liveXR := xr("db-x7k2p", claimLabels("default", "db"), finalizers(xrFinalizer),
		resourceRefs(false, map[string]any{"apiVersion": "database.aws.example.org/v1beta1", "kind": "RDSInstance", "name": "db-x7k2p-abcde"}))
	liveRDS := mr("db-x7k2p-abcde", composedByPG("db-x7k2p"), claimLabels("default", "db"), externalName("db"), finalizers(mrFinalizer))
	live := func() *cluster {
		return newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced, liveXR).managed(rdsGK, rdsGVR, false, stateSynced, liveRDS)
	}
	deleteXR := func(policy string, mods ...mod) *admissiontest.Request {
		r := admissiontest.Delete(pgXRGVR, "XPostgreSQLInstance", req("db-x7k2p", mods...))
		if policy != "" {
			p := metav1.DeletionPropagation(policy)
			r = r.Options(metav1.DeleteOptions{PropagationPolicy: &p})
		}
		return r
	}
	deleteApp := func(policy string, mods ...mod) *admissiontest.Request {
		r := admissiontest.Delete(appGVR, "XApp", req("db", append([]mod{inNamespace("default")}, mods...)...))
		if policy != "" {
			p := metav1.DeletionPropagation(policy)
			r = r.Options(metav1.DeleteOptions{PropagationPolicy: &p})
		}
		return r
	}
	liveAppRDS := mr("db-q8w2z", inNamespace("default"), ownedBy("platform.example.org/v1", "XApp", "db"), externalName("db"), finalizers(mrFinalizer))
	apps := func() *cluster {
		return newCluster().xrd(appXRD, appGVR, true, stateSynced, xr("db", inNamespace("default"))).managed(nsRDSGK, nsRDSGVR, true, stateSynced, liveAppRDS)
	}
	requireForeground := Config{RequireForegroundDelete: true}
	refuseBackground := func(policy string) admission.Response {
		return admission.Denied("claimguard: XApp default/db must be deleted with Foreground propagation in this cluster, not " + policy +
			": a Background delete removes it at once while its composed resources (1 now) are still deleting their external resources, " +
			"and a re-created XApp default/db would compose new resources with the same external names. " +
			"Repeat with kubectl delete --cascade=foreground (propagationPolicy: Foreground).")
	}
	appWaits := admission.Allowed("").WithWarnings(`claimguard: XApp default/db is deleted with Foreground propagation: it stays until its 1 composed resource is gone: ` +
		`RDSInstance default/db-q8w2z (external name "db"; finalizers: finalizer.managedresource.crossplane.io). kubectl delete waits until then.`)

	cases := map[string]struct {
		reason string
		rule   *Rule
		req    admission.Request
		want   admission.Response
	}{
		"ClaimWithForegroundPolicyWarnsWhatItWaitsFor": {
			reason: "kubectl delete of a Foreground claim hangs for minutes; the warning says for what.",
			rule:   live().defaults(),
			req:    deleteClaim(compositeDeletePolicy("Foreground")),
			want: admission.Allowed("").WithWarnings(`claimguard: PostgreSQLInstance default/db is deleted with compositeDeletePolicy Foreground: it stays until these are gone: ` +
				`XPostgreSQLInstance db-x7k2p, held by 1 composed resource: RDSInstance db-x7k2p-abcde (external name "db"; finalizers: finalizer.managedresource.crossplane.io). ` +
				"kubectl delete waits until then; follow progress with kubectl get managed -l crossplane.io/claim-namespace=default,crossplane.io/claim-name=db."),
		},
		"ClaimInheritsTheXRDsDefaultPolicy": {
			reason: "Without spec.compositeDeletePolicy the XRD's defaultCompositeDeletePolicy applies (Foreground for buckets).",
			rule:   newCluster().xrd(bucketXRD, xbucketGVR, false, stateSynced, xr("logs-9x", claimLabels("default", "logs"), finalizers(xrFinalizer))).defaults(),
			req:    admissiontest.Delete(bucketGVR, "Bucket", req("logs", inNamespace("default"))).Build(),
			want: admission.Allowed("").WithWarnings("claimguard: Bucket default/logs is deleted with compositeDeletePolicy Foreground: it stays until these are gone: XBucket logs-9x. " +
				"kubectl delete waits until then; follow progress with kubectl get managed -l crossplane.io/claim-namespace=default,crossplane.io/claim-name=logs."),
		},
		"ClaimWithBackgroundPolicyIsAllowedQuietly": {
			reason: "A Background claim delete returns at once; nothing to explain.",
			rule:   live().defaults(),
			req:    deleteClaim(),
			want:   admission.Allowed(""),
		},
		"ClaimWithoutCompositeIsAllowedQuietly": {
			reason: "A claim never bound to an XR deletes at once.",
			rule:   newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced).defaults(),
			req:    deleteClaim(compositeDeletePolicy("Foreground")),
			want:   admission.Allowed(""),
		},
		"ClaimDeleteWithUnsyncedCacheIsAnError": {
			reason: "The delete entry's failure policy (Ignore) lets it through with a warning; the handler never guesses.",
			rule:   newCluster().xrd(pgXRD, pgXRGVR, false, stateSyncing).defaults(),
			req:    deleteClaim(compositeDeletePolicy("Foreground")),
			want:   admission.Errored(http.StatusServiceUnavailable, errString("the cache of xpostgresqlinstances.database.example.org has not synced yet; retry shortly")),
		},
		"CompositeDeletedWithForegroundWarnsWhatItWaitsFor": {
			reason: "Crossplane's claim controller (or a person) deleting an XR with Foreground propagation waits for its composed resources.",
			rule:   live().defaults(),
			req:    deleteXR("Foreground", claimLabels("default", "db")).Build(),
			want: admission.Allowed("").WithWarnings(`claimguard: XPostgreSQLInstance db-x7k2p is deleted with Foreground propagation: it stays until its 1 composed resource is gone: ` +
				`RDSInstance db-x7k2p-abcde (external name "db"; finalizers: finalizer.managedresource.crossplane.io). kubectl delete waits until then.`),
		},
		"CompositeAlreadyDeletingInForegroundWarnsAgain": {
			reason: "A repeated delete of an XR that carries foregroundDeletion waits just the same.",
			rule:   apps().defaults(),
			req:    deleteApp("", finalizers(foregroundFinalizer)).Build(),
			want:   appWaits,
		},
		"CompositeDeletedInBackgroundIsAllowedQuietly": {
			reason: "Background deletion returns at once.",
			rule:   apps().defaults(),
			req:    deleteApp("Background").Build(),
			want:   admission.Allowed(""),
		},
		"RequireForegroundRefusesBackground": {
			reason: "requireForegroundDelete: a top-level XR deleted in the background leaves its MRs deleting behind it.",
			rule:   apps().rule(requireForeground),
			req:    deleteApp("Background").Build(),
			want:   refuseBackground("Background"),
		},
		"RequireForegroundRefusesTheDefaultPropagation": {
			reason: "No propagationPolicy means Background for custom resources.",
			rule:   apps().rule(requireForeground),
			req:    deleteApp("").Build(),
			want:   refuseBackground("Background (the default)"),
		},
		"RequireForegroundRefusesOrphan": {
			reason: "Orphaning leaves the MRs without their XR: the next XApp db collides with them.",
			rule:   apps().rule(requireForeground),
			req:    deleteApp("Orphan").Build(),
			want:   refuseBackground("Orphan"),
		},
		"RequireForegroundAllowsForeground": {
			reason: "Foreground is what the setting asks for; the usual warning follows.",
			rule:   apps().rule(requireForeground),
			req:    deleteApp("Foreground").Build(),
			want:   appWaits,
		},
		"RequireForegroundLeavesClaimedCompositesToTheClaim": {
			reason: "A claimed XR is deleted by Crossplane per the claim's compositeDeletePolicy.",
			rule:   live().rule(requireForeground),
			req:    deleteXR("Background", claimLabels("default", "db")).Build(),
			want:   admission.Allowed(""),
		},
		"RequireForegroundLeavesNestedCompositesToTheirParent": {
			reason: "A composed XR is deleted by Crossplane or the garbage collector as part of its parent's deletion.",
			rule:   apps().rule(requireForeground),
			req:    deleteApp("Background", ownedBy("platform.example.org/v1", "XPlatform", "team")).Build(),
			want:   admission.Allowed(""),
		},
		"RequireForegroundNeverBlocksNamespaceDeletion": {
			reason: "The namespace controller deletes everything in a namespace being deleted; refusing it leaves the namespace Terminating.",
			rule:   apps().rule(requireForeground),
			req:    deleteApp("Background").User("system:serviceaccount:kube-system:namespace-controller").Build(),
			want:   admission.Allowed(""),
		},
		"MalformedDeleteOptionsAreAnError": {
			reason: "Options the API server sends are always valid; garbage is refused, not guessed at.",
			rule:   apps().defaults(),
			req:    deleteApp("").Options([]byte(`{"propagationPolicy": 7}`)).Build(),
			want:   admission.Errored(http.StatusBadRequest, errString("decoding the delete options: json: cannot unmarshal number into Go struct field .propagationPolicy of type v1.DeletionPropagation")),
		},
		"DeleteOfAnUnknownKindIsAllowed": {
			reason: "The delete entry only matches kinds from XRDs; a stale rule is harmless.",
			rule:   apps().defaults(),
			req:    admissiontest.Delete(rdsGVR, "RDSInstance", req("x")).Build(),
			want:   admission.Allowed("not a claim or composite resource kind claimguard knows"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, handle(tc.rule, tc.req)); diff != "" {
				t.Errorf("%s\nHandle(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func compositeDeletePolicy(p string) mod {
	return func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, p, "spec", "compositeDeletePolicy")
	}
}

func TestOtherRequests(t *testing.T) {
	update := admissiontest.Update(pgClaimGVR, "PostgreSQLInstance", req("db", inNamespace("default")), req("db", inNamespace("default"))).Build()
	cases := map[string]struct {
		reason string
		rule   *Rule
		req    admission.Request
		want   admission.Response
	}{
		"UpdatesAreAllowed": {
			reason: "Only creates and deletes race a deletion; an update that reaches the rule is allowed.",
			rule:   standard().defaults(),
			req:    update,
			want:   admission.Allowed(""),
		},
		"BeforeDiscoveryEveryRequestIsAnError": {
			reason: "Before the first discovery nothing is known; the failure policy decides, never a silent allow.",
			rule:   New(Config{}),
			req:    admissiontest.Create(pgClaimGVR, "PostgreSQLInstance", req("db", inNamespace("default"))).Build(),
			want:   admission.Errored(http.StatusServiceUnavailable, errString("claimguard has not discovered the cluster's Crossplane kinds yet")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, handle(tc.rule, tc.req)); diff != "" {
				t.Errorf("%s\nHandle(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
