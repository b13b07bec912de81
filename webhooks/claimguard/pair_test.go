package claimguard

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
)

func TestLegacyGroup(t *testing.T) {
	cases := map[string]struct {
		group, want string
		ok          bool
	}{
		"ProviderSQL":               {group: "postgresql.sql.m.crossplane.io", want: "postgresql.sql.crossplane.io", ok: true},
		"UpjetProvider":             {group: "rds.aws.m.upbound.io", want: "rds.aws.upbound.io", ok: true},
		"ProviderWithOneGroup":      {group: "kubernetes.m.crossplane.io", want: "kubernetes.crossplane.io", ok: true},
		"LastMLabelIsTheOneRemoved": {group: "a.m.b.m.example.org", want: "a.m.b.example.org", ok: true},
		"LegacyGroup":               {group: "postgresql.sql.crossplane.io"},
		"MAsFirstLabelIsNoProvider": {group: "m.crossplane.io"},
		"MAsLastLabel":              {group: "example.m"},
		"MInsideALabel":             {group: "mm.example.org"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := legacyGroup(tc.group)
			if got != tc.want || ok != tc.ok {
				t.Errorf("legacyGroup(%q) = %q, %v; want %q, %v", tc.group, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// The migration scenario: provider-sql's PostgreSQL Role served in its
// legacy cluster-scoped group and in its namespaced .m. group.
var (
	legacyRoleGVR = schema.GroupVersionResource{Group: "postgresql.sql.crossplane.io", Version: "v1alpha1", Resource: "roles"}
	legacyRoleGK  = schema.GroupKind{Group: "postgresql.sql.crossplane.io", Kind: "Role"}
	nsRoleGVR     = schema.GroupVersionResource{Group: "postgresql.sql.m.crossplane.io", Version: "v1alpha1", Resource: "roles"}
	nsRoleGK      = schema.GroupKind{Group: "postgresql.sql.m.crossplane.io", Kind: "Role"}
	nsDBGVR       = schema.GroupVersionResource{Group: "postgresql.sql.m.crossplane.io", Version: "v1alpha1", Resource: "databases"}
	nsDBGK        = schema.GroupKind{Group: "postgresql.sql.m.crossplane.io", Kind: "Database"}

	deletingLegacyRole = mr("app-x7k2p-role", composedByPG("app-x7k2p"), claimLabels("default", "app"), externalName("app"),
		deletingSince(3*time.Minute), finalizers(mrFinalizer))
	liveLegacyRole = mr("app-live-role", composedByPG("app-live"), externalName("app"), finalizers(mrFinalizer))
	deletingNSRole = mr("app-q8w2z", inNamespace("team-a"), ownedBy("platform.example.org/v1", "XApp", "app"), externalName("app"),
		deletingSince(2*time.Minute), finalizers(mrFinalizer))
)

func TestManagedCreateAcrossLegacyAndNamespacedGroups(t *testing.T) {
	createNS := func(gvr schema.GroupVersionResource, kind, name string, mods ...mod) admission.Request {
		return admissiontest.Create(gvr, kind, req(name, append([]mod{inNamespace("team-a")}, mods...)...)).User("system:serviceaccount:crossplane-system:crossplane").Build()
	}
	createLegacy := func(name string, mods ...mod) admission.Request {
		return admissiontest.Create(legacyRoleGVR, "Role", req(name, mods...)).User("system:serviceaccount:crossplane-system:crossplane").Build()
	}
	both := func(st state, legacy []*object, namespaced []*object) *Rule {
		return newCluster().
			managed(legacyRoleGK, legacyRoleGVR, false, st, legacy...).
			managed(nsRoleGK, nsRoleGVR, true, stateSynced, namespaced...).
			managed(nsDBGK, nsDBGVR, true, stateSynced).defaults()
	}
	cases := map[string]struct {
		reason string
		rule   *Rule
		req    admission.Request
		want   admission.Response
	}{
		"NamespacedMRWithTheExternalNameOfADeletingLegacyMRIsDenied": {
			reason: "Migrating to the .m. group while the legacy Role still deletes the PostgreSQL role: the new MR would create or adopt what the old one destroys.",
			rule:   both(stateSynced, []*object{deletingLegacyRole}, nil),
			req:    createNS(nsRoleGVR, "Role", "app-n3w11", ownedBy("platform.example.org/v1", "XApp", "app"), externalName("app")),
			want: admission.Denied(`claimguard: Role team-a/app-n3w11 with external name "app" cannot be created yet: Role app-x7k2p-role in postgresql.sql.crossplane.io ` +
				`(deleting for 3m0s; finalizers: finalizer.managedresource.crossplane.io; composed by XPostgreSQLInstance app-x7k2p for claim default/app) ` +
				`has the same external name and still manages that external resource; postgresql.sql.crossplane.io and postgresql.sql.m.crossplane.io are the legacy cluster-scoped ` +
				`and the namespaced group of the same provider kind, so a second Role would create or adopt it while the first deletes it. ` +
				"Retry once Role app-x7k2p-role is gone (kubectl get roles.postgresql.sql.crossplane.io app-x7k2p-role)."),
		},
		"LegacyMRWithTheExternalNameOfADeletingNamespacedMRIsDenied": {
			reason: "The way back is the same collision: a legacy Role re-created while the namespaced one still deletes the role.",
			rule:   both(stateSynced, nil, []*object{deletingNSRole}),
			req:    createLegacy("app-legacy", composedByPG("app-x7k2p"), externalName("app")),
			want: admission.Denied(`claimguard: Role app-legacy with external name "app" cannot be created yet: Role team-a/app-q8w2z in postgresql.sql.m.crossplane.io ` +
				`(deleting for 2m0s; finalizers: finalizer.managedresource.crossplane.io; composed by XApp app) ` +
				`has the same external name and still manages that external resource; postgresql.sql.crossplane.io and postgresql.sql.m.crossplane.io are the legacy cluster-scoped ` +
				`and the namespaced group of the same provider kind, so a second Role would create or adopt it while the first deletes it. ` +
				"Retry once Role team-a/app-q8w2z is gone (kubectl get roles.postgresql.sql.m.crossplane.io -n team-a app-q8w2z)."),
		},
		"DeletingInBothGroupsNamesTheOldestAndCountsTheRest": {
			reason: "The oldest deletion is named, whichever group it is in.",
			rule:   both(stateSynced, []*object{deletingLegacyRole}, []*object{deletingNSRole}),
			req:    createNS(nsRoleGVR, "Role", "app-n3w11", externalName("app")),
			want: admission.Denied(`claimguard: Role team-a/app-n3w11 with external name "app" cannot be created yet: Role app-x7k2p-role in postgresql.sql.crossplane.io ` +
				`(deleting for 3m0s; finalizers: finalizer.managedresource.crossplane.io; composed by XPostgreSQLInstance app-x7k2p for claim default/app) ` +
				`has the same external name and still manages that external resource (1 more Role with this external name is deleting too); postgresql.sql.crossplane.io and postgresql.sql.m.crossplane.io are the legacy cluster-scoped ` +
				`and the namespaced group of the same provider kind, so a second Role would create or adopt it while the first deletes it. ` +
				"Retry once Role app-x7k2p-role is gone (kubectl get roles.postgresql.sql.crossplane.io app-x7k2p-role)."),
		},
		"ALiveLegacyMRWithTheExternalNameIsAllowed": {
			reason: "As within one group, only a deletion in flight destroys what the new MR points at; two live ones are the provider's business.",
			rule:   both(stateSynced, []*object{liveLegacyRole}, nil),
			req:    createNS(nsRoleGVR, "Role", "app-n3w11", externalName("app")),
			want:   admission.Allowed(""),
		},
		"AnotherKindOfTheNamespacedGroupIsAllowed": {
			reason: "External names are unique per provider kind: the database app is not the role app.",
			rule:   both(stateSynced, []*object{deletingLegacyRole}, nil),
			req:    createNS(nsDBGVR, "Database", "app-db", externalName("app")),
			want:   admission.Allowed(""),
		},
		"TheLegacyCacheSyncingIsAnError": {
			reason: "The other group's cache is searched like the request's own: unsynced, it never answers, and the failure policy decides.",
			rule:   both(stateSyncing, nil, nil),
			req:    createNS(nsRoleGVR, "Role", "app-n3w11", externalName("app")),
			want:   admission.Errored(http.StatusServiceUnavailable, errString("the cache of roles.postgresql.sql.crossplane.io has not synced yet; retry shortly")),
		},
		"TheLegacyKindStewardMayNotListIsAllowedWithAWarning": {
			reason: "Missing RBAC for the other group is visible on every request until fixed; the request's own group is still searched.",
			rule:   both(stateForbidden, nil, nil),
			req:    createNS(nsRoleGVR, "Role", "app-n3w11", externalName("app")),
			want: admission.Allowed("").WithWarnings("claimguard could not check this request: Steward may not list roles.postgresql.sql.crossplane.io " +
				"(grant list and watch through a ClusterRole labelled steward.dev/aggregate-to-claimguard=true)"),
		},
		"TwoNamespacedGroupsAreNotPaired": {
			reason: "Only a legacy cluster-scoped kind and a namespaced .m. kind serve one provider kind; a namespaced kind in the legacy group's name is another provider's.",
			rule: newCluster().
				managed(schema.GroupKind{Group: "postgresql.sql.crossplane.io", Kind: "Role"}, legacyRoleGVR, true, stateSynced, deletingNSRole).
				managed(nsRoleGK, nsRoleGVR, true, stateSynced).defaults(),
			req:  createNS(nsRoleGVR, "Role", "app-n3w11", externalName("app")),
			want: admission.Allowed(""),
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
