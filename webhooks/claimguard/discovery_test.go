package claimguard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
)

var allow = cmp.AllowUnexported(xrd{}, wanted{}, plan{}, object{}, objectMore{}, ref{})

func TestParseXRD(t *testing.T) {
	cases := map[string]struct {
		reason  string
		xrd     map[string]any
		want    *xrd
		wantErr bool
	}{
		"V1WithClaim": {
			reason: "A v1 XRD names the composite and claim kinds; the referenceable version is the one to watch.",
			xrd: map[string]any{"metadata": map[string]any{"name": "xpostgresqlinstances.database.example.org"}, "spec": map[string]any{
				"group": "database.example.org", "names": map[string]any{"kind": "XPostgreSQLInstance", "plural": "xpostgresqlinstances"},
				"claimNames":                   map[string]any{"kind": "PostgreSQLInstance", "plural": "postgresqlinstances"},
				"defaultCompositeDeletePolicy": "Foreground",
				"versions": []any{
					map[string]any{"name": "v1alpha1", "served": true, "referenceable": false},
					map[string]any{"name": "v1beta1", "served": true, "referenceable": true},
					map[string]any{"name": "v1", "served": false, "referenceable": false},
				},
			}},
			want: &xrd{name: "xpostgresqlinstances.database.example.org", group: "database.example.org",
				compositeKind: "XPostgreSQLInstance", compositePlural: "xpostgresqlinstances",
				claimKind: "PostgreSQLInstance", claimPlural: "postgresqlinstances",
				referenceable: "v1beta1", defaultCompositeDeletePolicy: "Foreground"},
		},
		"V2NamespacedWithoutClaim": {
			reason: "A v2 XRD offers no claim; the default delete policy is Background.",
			xrd: map[string]any{"metadata": map[string]any{"name": "xapps.platform.example.org"}, "spec": map[string]any{
				"scope": "Namespaced", "group": "platform.example.org", "names": map[string]any{"kind": "XApp", "plural": "xapps"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "referenceable": true}},
			}},
			want: &xrd{name: "xapps.platform.example.org", group: "platform.example.org", compositeKind: "XApp", compositePlural: "xapps",
				referenceable: "v1", defaultCompositeDeletePolicy: "Background"},
		},
		"HalfAClaimIsNoClaim": {
			reason: "claimNames without a plural cannot be matched by a webhook rule.",
			xrd: map[string]any{"metadata": map[string]any{"name": "x"}, "spec": map[string]any{
				"group": "g.example.org", "names": map[string]any{"kind": "XThing", "plural": "xthings"},
				"claimNames": map[string]any{"kind": "Thing"},
			}},
			want: &xrd{name: "x", group: "g.example.org", compositeKind: "XThing", compositePlural: "xthings", defaultCompositeDeletePolicy: "Background"},
		},
		"NoSpecIsAnError":   {reason: "Nothing to read.", xrd: map[string]any{"metadata": map[string]any{"name": "x"}}, wantErr: true},
		"NoPluralIsAnError": {reason: "The composite kind must be nameable.", xrd: map[string]any{"spec": map[string]any{"group": "g", "names": map[string]any{"kind": "X"}}}, wantErr: true},
		"WrongTypesAreIgnored": {
			reason:  "Fields of unexpected types read as missing.",
			xrd:     map[string]any{"spec": map[string]any{"group": 7, "names": "x"}},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseXRD(&unstructured.Unstructured{Object: tc.xrd})
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nparseXRD(...): error %v, want error %v", tc.reason, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, allow); diff != "" {
				t.Errorf("%s\nparseXRD(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestTrimXRDKeepsWhatParseXRDReads(t *testing.T) {
	full := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.crossplane.io/v1", "kind": "CompositeResourceDefinition",
		"metadata": map[string]any{"name": "xpostgresqlinstances.database.example.org", "resourceVersion": "42", "managedFields": []any{map[string]any{"manager": "kubectl"}}},
		"spec": map[string]any{
			"group": "database.example.org", "names": map[string]any{"kind": "XPostgreSQLInstance", "plural": "xpostgresqlinstances"},
			"claimNames": map[string]any{"kind": "PostgreSQLInstance", "plural": "postgresqlinstances"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "referenceable": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object"}}}},
			"connectionSecretKeys": []any{"username"},
		},
		"status": map[string]any{"conditions": []any{}},
	}}
	trimmed, err := trimXRD(full)
	if err != nil {
		t.Fatal(err)
	}
	u := trimmed.(*unstructured.Unstructured)
	want := map[string]any{
		"apiVersion": "apiextensions.crossplane.io/v1", "kind": "CompositeResourceDefinition",
		"metadata": map[string]any{"name": "xpostgresqlinstances.database.example.org", "resourceVersion": "42"},
		"spec": map[string]any{
			"group": "database.example.org", "names": map[string]any{"kind": "XPostgreSQLInstance", "plural": "xpostgresqlinstances"},
			"claimNames": map[string]any{"kind": "PostgreSQLInstance", "plural": "postgresqlinstances"},
			"versions":   []any{map[string]any{"name": "v1alpha1", "served": true, "referenceable": true}},
		},
	}
	if diff := cmp.Diff(want, u.Object); diff != "" {
		t.Errorf("trimXRD dropped or kept the wrong fields: -want, +got:\n%s", diff)
	}
	before, _ := parseXRD(full)
	after, _ := parseXRD(u)
	if diff := cmp.Diff(before, after, allow); diff != "" {
		t.Errorf("parseXRD reads differently after trimming: -before, +after:\n%s", diff)
	}
}

func TestTransform(t *testing.T) {
	tr := true
	deleted := metav1.NewTime(now)
	cases := map[string]struct {
		reason  string
		in      any
		want    *object
		wantErr bool
	}{
		"MetadataOfAManagedResource": {
			reason: "A deleting MR keeps name, deletion, finalizers, external name, controller owner and claim; nothing else.",
			in: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
				Name: "db-x7k2p-abcde", ResourceVersion: "7", DeletionTimestamp: &deleted, Finalizers: []string{mrFinalizer},
				Labels:          map[string]string{labelClaimName: "db", labelClaimNamespace: "default", labelComposite: "db-x7k2p", "other": "x"},
				Annotations:     map[string]string{annotationExtName: "db", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "not-controller"}, {APIVersion: "database.example.org/v1alpha1", Kind: "XPostgreSQLInstance", Name: "db-x7k2p", Controller: &tr}},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "crossplane"}},
			}},
			want: &object{id: "db-x7k2p-abcde" + "7" + "db", rvLen: 1, extLen: 2, deletion: &deleted, finalizers: internFinalizers([]string{mrFinalizer}),
				owner: "database.example.org/XPostgreSQLInstance/db-x7k2p", more: &objectMore{claim: "default/db"}},
		},
		"MetadataOfALiveManagedResource": {
			reason: "A live MR keeps no claim: only deleting MRs are looked up by claim, and a live MR is the most common cached object.",
			in: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
				Name: "db-x7k2p-abcde", Namespace: "team-a", ResourceVersion: "7", Finalizers: []string{mrFinalizer},
				Labels:          map[string]string{labelClaimName: "db", labelClaimNamespace: "default"},
				Annotations:     map[string]string{annotationExtName: "db"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "database.example.org/v1alpha1", Kind: "XPostgreSQLInstance", Name: "db-x7k2p", Controller: &tr}},
			}},
			want: &object{id: "team-a/db-x7k2p-abcde" + "7" + "db", rvLen: 1, extLen: 2, finalizers: internFinalizers([]string{mrFinalizer}),
				owner: "database.example.org/XPostgreSQLInstance/db-x7k2p"},
		},
		"V1CompositeWithClaimRefAndResourceRefs": {
			reason: "An XR keeps its claim from spec.claimRef and its resource references.",
			in: &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "db-x7k2p", "resourceVersion": "9"}, "spec": map[string]any{
				"claimRef":     map[string]any{"namespace": "default", "name": "db"},
				"resourceRefs": []any{map[string]any{"apiVersion": "database.aws.example.org/v1beta1", "kind": "RDSInstance", "name": "db-x7k2p-abcde"}, "garbage", map[string]any{"kind": "NoName"}},
				"parameters":   map[string]any{"storageGB": 20},
			}}},
			want: &object{id: "db-x7k2p" + "9", rvLen: 1, more: &objectMore{claim: "default/db",
				refs: []ref{newRef("database.aws.example.org", "RDSInstance", "", "db-x7k2p-abcde")}}},
		},
		"V2NamespacedComposite": {
			reason: "A v2 XR's references live under spec.crossplane and default to its namespace.",
			in: &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "db", "namespace": "default"}, "spec": map[string]any{
				"crossplane": map[string]any{"resourceRefs": []any{map[string]any{"apiVersion": "database.aws.m.example.org/v1beta1", "kind": "RDSInstance", "name": "db-q8w2z"}}},
			}}},
			want: &object{id: "default/db", more: &objectMore{refs: []ref{newRef("database.aws.m.example.org", "RDSInstance", "default", "db-q8w2z")}}},
		},
		"AlreadyTransformedPassesThrough": {
			reason: "client-go may hand an object to the transform twice.",
			in:     &object{id: "x"},
			want:   &object{id: "x"},
		},
		"OtherTypesAreAnError": {
			reason:  "Nothing else is ever cached.",
			in:      "a string",
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := transform(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\ntransform(...): error %v, want error %v", tc.reason, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, got.(*object), allow); diff != "" {
				t.Errorf("%s\ntransform(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestMakePlan(t *testing.T) {
	res := func(group, resource, kind string, namespaced bool, categories ...string) *clustercache.Resource {
		return &clustercache.Resource{GroupResource: schema.GroupResource{Group: group, Resource: resource}, Kind: kind, Namespaced: namespaced, Versions: []string{"v1", "v1alpha1"}, Categories: categories}
	}
	resources := map[schema.GroupResource]*clustercache.Resource{}
	for _, a := range []*clustercache.Resource{
		res("database.example.org", "xpostgresqlinstances", "XPostgreSQLInstance", false, "composite"),
		res("database.example.org", "postgresqlinstances", "PostgreSQLInstance", true, "claim"),
		res("database.aws.example.org", "rdsinstances", "RDSInstance", false, "crossplane", "managed"),
		res("platform.example.org", "xapps", "XApp", true, "composite"),
		res("apps", "deployments", "Deployment", true, "all"),
	} {
		resources[a.GroupResource] = a
	}
	pg := *pgXRD
	pg.referenceable = "v1alpha1"
	unserved := &xrd{name: "xqueues.mq.example.org", group: "mq.example.org", compositeKind: "XQueue", compositePlural: "xqueues", claimKind: "Queue", claimPlural: "queues"}
	duplicate := &xrd{name: "zz-duplicate", group: "platform.example.org", compositeKind: "XApp", compositePlural: "xapps"}
	crds := map[schema.GroupResource]bool{}
	for gr := range resources {
		if gr.Group != "apps" {
			crds[gr] = true
		}
	}
	got := makePlan(resources, []*xrd{duplicate, unserved, &pg, appXRD}, crds)
	want := plan{
		ignored: map[string]string{},
		claims:  map[schema.GroupKind]*xrd{pgXRD.claimGK(): &pg, unserved.claimGK(): unserved},
		xrds:    map[schema.GroupKind]*xrd{pgXRD.compositeGK(): &pg, appXRD.compositeGK(): appXRD, unserved.compositeGK(): unserved},
		served:  map[schema.GroupResource]bool{pgXRD.compositeGR(): true, pgXRD.claimGR(): true, appXRD.compositeGR(): true},
		watches: []wanted{
			{gk: rdsGK, gvr: schema.GroupVersionResource{Group: "database.aws.example.org", Version: "v1", Resource: "rdsinstances"}, role: roleManaged},
			{gk: pgXRD.compositeGK(), gvr: pgXRGVR, role: roleComposite},
			{gk: appXRD.compositeGK(), gvr: appGVR, namespaced: true, role: roleComposite},
		},
	}
	if diff := cmp.Diff(want, got, allow); diff != "" {
		t.Errorf("makePlan: served XR kinds at their referenceable version, managed-category kinds, first XRD wins a duplicate kind: -want, +got:\n%s", diff)
	}
}

func TestMakePlanIgnoresXRDsThatAreNotCrossplanesToCompose(t *testing.T) {
	res := func(group, resource, kind string, categories ...string) *clustercache.Resource {
		return &clustercache.Resource{GroupResource: schema.GroupResource{Group: group, Resource: resource}, Kind: kind, Namespaced: true, Versions: []string{"v1"}, Categories: categories}
	}
	resources := map[schema.GroupResource]*clustercache.Resource{}
	for _, a := range []*clustercache.Resource{
		res("apps", "deployments", "Deployment", "all"),
		res("", "configmaps", "ConfigMap"),
		res("source.toolkit.fluxcd.io", "gitrepositories", "GitRepository", "fluxcd"),
		res("metrics.example.org", "xwidgets", "XWidget", "composite"),
		res("database.example.org", "xpostgresqlinstances", "XPostgreSQLInstance", "composite"),
		res("database.example.org", "postgresqlinstances", "PostgreSQLInstance", "claim"),
		res("database.example.org", "secrets", "Secret"),
	} {
		resources[a.GroupResource] = a
	}
	crds := map[schema.GroupResource]bool{}
	for gr := range resources {
		// metrics.example.org is an aggregated API, not a CRD.
		if gr.Group != "apps" && gr.Group != "" && gr.Group != "metrics.example.org" {
			crds[gr] = true
		}
	}
	xrdOf := func(name, group, kind, plural, claimKind, claimPlural string) *xrd {
		return &xrd{name: name, group: group, compositeKind: kind, compositePlural: plural, claimKind: claimKind, claimPlural: claimPlural}
	}
	tests := map[string]struct {
		reason string
		xrd    *xrd
		want   string
	}{
		"BuiltInGroup":            {"an XRD named after Deployments must not make Steward judge every Deployment", xrdOf("deployments.apps", "apps", "Deployment", "deployments", "", ""), `spec.group "apps" is a Kubernetes API group, which Crossplane never composes`},
		"CoreGroupClaim":          {"the core group is Kubernetes' too", xrdOf("x.", "", "XConfigMap", "xconfigmaps", "ConfigMap", "configmaps"), `spec.group "" is a Kubernetes API group, which Crossplane never composes`},
		"K8sIOGroup":              {"every *.k8s.io group is Kubernetes'", xrdOf("x.networking.k8s.io", "networking.k8s.io", "Ingress", "ingresses", "", ""), `spec.group "networking.k8s.io" is a Kubernetes API group, which Crossplane never composes`},
		"AnotherProjectsCRD":      {"another project's CRD is not in the composite category", xrdOf("gitrepositories.source.toolkit.fluxcd.io", "source.toolkit.fluxcd.io", "GitRepository", "gitrepositories", "", ""), `the CustomResourceDefinition gitrepositories.source.toolkit.fluxcd.io is not in the "composite" category Crossplane gives the kinds it generates for an XRD`},
		"AggregatedAPI":           {"a kind an aggregated API serves is not Crossplane's, whatever its categories", xrdOf("xwidgets.metrics.example.org", "metrics.example.org", "XWidget", "xwidgets", "", ""), "xwidgets.metrics.example.org is served by the API server itself or an aggregated API, not by a CustomResourceDefinition"},
		"ClaimNamedAfterOtherCRD": {"the claim kind is checked too", xrdOf("xpostgresqlinstances.database.example.org", "database.example.org", "XPostgreSQLInstance", "xpostgresqlinstances", "Secret", "secrets"), `the CustomResourceDefinition secrets.database.example.org is not in the "claim" category Crossplane gives the kinds it generates for an XRD`},
		"Composable":              {"Crossplane's own kinds pass", xrdOf("xpostgresqlinstances.database.example.org", "database.example.org", "XPostgreSQLInstance", "xpostgresqlinstances", "PostgreSQLInstance", "postgresqlinstances"), ""},
		"NotServedYet":            {"a kind not served yet joins the rules only once served, and is checked then", xrdOf("xqueues.mq.example.org", "mq.example.org", "XQueue", "xqueues", "", ""), ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := makePlan(resources, []*xrd{tc.xrd}, crds)
			if got := p.ignored[tc.xrd.name]; got != tc.want {
				t.Errorf("%s\nignored reason = %q, want %q", tc.reason, got, tc.want)
			}
			if tc.want != "" && (len(p.xrds) != 0 || len(p.claims) != 0 || len(p.served) != 0) {
				t.Errorf("%s\nan ignored XRD's kinds are still known: xrds %v, claims %v, served %v", tc.reason, p.xrds, p.claims, p.served)
			}
		})
	}
}

func TestWebhookRules(t *testing.T) {
	c := newCluster().
		xrd(pgXRD, pgXRGVR, false, stateSynced).
		xrd(appXRD, appGVR, true, stateSynced).
		xrd(bucketXRD, xbucketGVR, false, stateSyncing).
		managed(rdsGK, rdsGVR, false, stateSynced)
	scope := admissionregistrationv1.AllScopes
	want := []admissionregistrationv1.RuleWithOperations{
		{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"database.example.org"}, APIVersions: []string{"*"}, Resources: []string{"postgresqlinstances", "xpostgresqlinstances"}, Scope: &scope}},
		{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"platform.example.org"}, APIVersions: []string{"*"}, Resources: []string{"xapps"}, Scope: &scope}},
	}
	if diff := cmp.Diff(want, webhookRules(c.s, admissionregistrationv1.Create)); diff != "" {
		t.Errorf("webhookRules: synced XRDs' claim and XR kinds, grouped and sorted; the syncing XBucket left out: -want, +got:\n%s", diff)
	}
	if got := webhookRules(nil, admissionregistrationv1.Create); got != nil {
		t.Errorf("webhookRules(nil) = %v, want none", got)
	}
}

// TestCompositesKeepOnlyReferencesToKindsNotWatched: a composite's
// references to watched kinds are never read (composed finds those
// objects through the owner index), so the composite transform drops
// them, and keeps the others.
func TestCompositesKeepOnlyReferencesToKindsNotWatched(t *testing.T) {
	d := &discoverer{}
	watched := map[schema.GroupKind]bool{rdsGK: true}
	d.watched.Store(&watched)
	xr := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "db-x7k2p"}, "spec": map[string]any{
		"claimRef": map[string]any{"namespace": "default", "name": "db"},
		"resourceRefs": []any{
			map[string]any{"apiVersion": rdsGK.Group + "/v1beta1", "kind": rdsGK.Kind, "name": "db-x7k2p-abcde"},
			map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "name": "db-x7k2p-conf"},
		},
	}}}
	out, err := d.transform(roleComposite)(xr)
	if err != nil {
		t.Fatal(err)
	}
	want := []ref{newRef("kubernetes.crossplane.io", "Object", "", "db-x7k2p-conf")}
	if got := out.(*object).refs(); !cmp.Equal(want, got, allow) || cap(got) != len(got) {
		t.Errorf("references kept: %v (cap %d), want %v, exactly sized", got, cap(got), want)
	}
	if got := out.(*object).claim(); got != "default/db" {
		t.Errorf("claim = %q, want default/db", got)
	}

	watched[schema.GroupKind{Group: "kubernetes.crossplane.io", Kind: "Object"}] = true
	out, _ = d.transform(roleComposite)(xr)
	if got := out.(*object).refs(); got != nil {
		t.Errorf("every kind watched: references kept %v, want none", got)
	}
	if mr, _ := d.transform(roleManaged)(realisticMR(1, 0)); mr.(*object).more != nil {
		t.Errorf("a managed resource's transform kept %+v", mr.(*object).more)
	}
}
