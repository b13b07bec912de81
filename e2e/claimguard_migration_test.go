package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stewardhq/steward/e2e/harness"
)

// provider-sql's PostgreSQL kinds, in its legacy cluster-scoped group and
// its namespaced .m. group, from the vendored CRDs (e2e/upstream).
var (
	legacyRoleGVK = schema.GroupVersionKind{Group: "postgresql.sql.crossplane.io", Version: "v1alpha1", Kind: "Role"}
	nsRoleGVK     = schema.GroupVersionKind{Group: "postgresql.sql.m.crossplane.io", Version: "v1alpha1", Kind: "Role"}
	legacyDBGVK   = schema.GroupVersionKind{Group: "postgresql.sql.crossplane.io", Version: "v1alpha1", Kind: "Database"}
	nsDBGVK       = schema.GroupVersionKind{Group: "postgresql.sql.m.crossplane.io", Version: "v1alpha1", Kind: "Database"}
)

// composedSQL is a provider-sql MR as Crossplane composes it: legacy MRs
// (namespace "") for a v1 XR of the sample XRD, namespaced ones for a v2
// XApp in their namespace. spec is what the provider's schema requires.
func composedSQL(gvk schema.GroupVersionKind, namespace, name, owner string, ownerUID types.UID, extName string, finalizer bool) string {
	ownerAPIVersion, ownerKind, scope, spec := "database.example.org/v1alpha1", "XPostgreSQLInstance", "", "spec: {forProvider: {}, providerConfigRef: {name: default}, deletionPolicy: Delete}\n"
	if namespace != "" {
		ownerAPIVersion, ownerKind = "platform.example.org/v1", "XApp"
		scope = "  namespace: " + namespace + "\n"
		spec = "spec: {forProvider: {}, providerConfigRef: {kind: ClusterProviderConfig, name: default}}\n"
	}
	fin := ""
	if finalizer {
		fin = "  finalizers: [" + mrFinalizer + "]\n"
	}
	if gvk.Kind == "Role" {
		spec = strings.Replace(spec, "forProvider: {}", "forProvider: {privileges: {login: true}}", 1)
	}
	return fmt.Sprintf(`apiVersion: %s
kind: %s
metadata:
  name: %s
%s  labels: {crossplane.io/composite: %s}
  annotations: {crossplane.io/external-name: %s}
%s  ownerReferences:
  - {apiVersion: %s, kind: %s, name: %s, uid: %s, controller: true, blockOwnerDeletion: true}
%s`, gvk.GroupVersion(), gvk.Kind, name, scope, owner, extName, fin, ownerAPIVersion, ownerKind, owner, ownerUID, spec)
}

// TestClaimguardMigrationBetweenLegacyAndNamespacedGroups runs the
// migration collision through the API server on provider-sql's real CRDs:
// a namespaced Role (postgresql.sql.m.crossplane.io) with the external
// name of a legacy Role (postgresql.sql.crossplane.io) that is still being
// deleted is refused, naming the legacy Role and its group; so is the way
// back, a legacy Database with the external name of a namespaced Database
// being deleted. Other kinds and live MRs pass, and once the provider's
// finalizers are gone the creates pass.
func TestClaimguardMigrationBetweenLegacyAndNamespacedGroups(t *testing.T) {
	env.LogOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := testNamespace(t, ctx, "sql-migration")

	// The legacy Role, composed for claim default/app, is deleted (the
	// garbage collector's part once its XR went); provider-sql's finalizer
	// keeps it while it drops the PostgreSQL role.
	kubectlOK(t, ctx, composedSQL(legacyRoleGVK, "", "app-x7k2p-role", "app-x7k2p", "0b1c2d3e-0000-4000-8000-000000000011", "e2e-migrate-app", true),
		"--as", crossplaneUser, "create", "-f", "-")
	t.Cleanup(func() { dropFinalizers(t, context.Background(), legacyRoleGVK, "", "app-x7k2p-role") })
	kubectlOK(t, ctx, "", "delete", "roles.postgresql.sql.crossplane.io", "app-x7k2p-role", "--wait=false")

	// The migrated composition creates the namespaced Role with the same
	// external name: refused while the legacy one still deletes.
	nsRole := composedSQL(nsRoleGVK, ns, "app-q8w2z", "app", "0b1c2d3e-0000-4000-8000-000000000012", "e2e-migrate-app", false)
	harness.Eventually(t, claimguardTimeout, func() error {
		_, stderr, err := env.Kubectl(ctx, nsRole, "--as", crossplaneUser, "create", "--dry-run=server", "-f", "-")
		if err == nil || !strings.Contains(stderr, "claimguard: ") {
			return fmt.Errorf("dry-run create of the namespaced Role is not refused by claimguard yet: %v %s", err, stderr)
		}
		return nil
	})
	refusedBy(t, ctx, claimguardManagedHook, nsRole, []string{"--as", crossplaneUser, "create", "-f", "-"},
		`claimguard: Role `+ns+`/app-q8w2z with external name "e2e-migrate-app" cannot be created yet: Role app-x7k2p-role in postgresql.sql.crossplane.io (deleting for `,
		"; finalizers: finalizer.managedresource.crossplane.io; composed by XPostgreSQLInstance app-x7k2p) has the same external name and still manages that external resource; ",
		"postgresql.sql.crossplane.io and postgresql.sql.m.crossplane.io are the legacy cluster-scoped and the namespaced group of the same provider kind, so a second Role would create or adopt it while the first deletes it.",
		"Retry once Role app-x7k2p-role is gone (kubectl get roles.postgresql.sql.crossplane.io app-x7k2p-role).")

	// A namespaced Database named like the role is another external
	// resource: allowed.
	if _, _, err := env.Kubectl(ctx, composedSQL(nsDBGVK, ns, "app-db", "app", "0b1c2d3e-0000-4000-8000-000000000012", "e2e-migrate-app", false),
		"--as", crossplaneUser, "create", "--dry-run=server", "-f", "-"); err != nil {
		t.Errorf("a namespaced Database with the external name of a deleting legacy Role must be allowed: %v", err)
	}

	// The way back: a namespaced Database being deleted holds back a
	// legacy Database with its external name.
	kubectlOK(t, ctx, composedSQL(nsDBGVK, ns, "shop-db", "shop", "0b1c2d3e-0000-4000-8000-000000000013", "e2e-migrate-shop", true),
		"--as", crossplaneUser, "create", "-f", "-")
	t.Cleanup(func() { dropFinalizers(t, context.Background(), nsDBGVK, ns, "shop-db") })
	kubectlOK(t, ctx, "", "delete", "databases.postgresql.sql.m.crossplane.io", "shop-db", "-n", ns, "--wait=false")
	legacyDB := composedSQL(legacyDBGVK, "", "shop-n3w11-db", "shop-n3w11", "0b1c2d3e-0000-4000-8000-000000000014", "e2e-migrate-shop", false)
	harness.Eventually(t, claimguardTimeout, func() error {
		_, stderr, err := env.Kubectl(ctx, legacyDB, "--as", crossplaneUser, "create", "--dry-run=server", "-f", "-")
		if err == nil || !strings.Contains(stderr, "claimguard: ") {
			return fmt.Errorf("dry-run create of the legacy Database is not refused by claimguard yet: %v %s", err, stderr)
		}
		return nil
	})
	refusedBy(t, ctx, claimguardManagedHook, legacyDB, []string{"--as", crossplaneUser, "create", "-f", "-"},
		`claimguard: Database shop-n3w11-db with external name "e2e-migrate-shop" cannot be created yet: Database `+ns+`/shop-db in postgresql.sql.m.crossplane.io (deleting for `,
		"Retry once Database "+ns+"/shop-db is gone (kubectl get databases.postgresql.sql.m.crossplane.io -n "+ns+" shop-db).")

	// provider-sql finishes: both creates pass.
	dropFinalizers(t, ctx, legacyRoleGVK, "", "app-x7k2p-role")
	dropFinalizers(t, ctx, nsDBGVK, ns, "shop-db")
	harness.Eventually(t, claimguardTimeout, func() error {
		_, _, err := env.Kubectl(ctx, nsRole, "--as", crossplaneUser, "create", "-f", "-")
		return err
	})
	harness.Eventually(t, claimguardTimeout, func() error {
		_, _, err := env.Kubectl(ctx, legacyDB, "--as", crossplaneUser, "create", "-f", "-")
		return err
	})
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "delete", "databases.postgresql.sql.crossplane.io", "shop-n3w11-db", "--wait=false")
	})

	// A live legacy Role does not hold back a namespaced one with its
	// external name: side by side is how users migrate (orphan, adopt,
	// then delete the legacy MR).
	kubectlOK(t, ctx, composedSQL(legacyRoleGVK, "", "live-x7k2p-role", "live-x7k2p", "0b1c2d3e-0000-4000-8000-000000000015", "e2e-migrate-live", false),
		"--as", crossplaneUser, "create", "-f", "-")
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "delete", "roles.postgresql.sql.crossplane.io", "live-x7k2p-role", "--wait=false")
	})
	if _, _, err := env.Kubectl(ctx, composedSQL(nsRoleGVK, ns, "live-q8w2z", "live", "0b1c2d3e-0000-4000-8000-000000000016", "e2e-migrate-live", false),
		"--as", crossplaneUser, "create", "--dry-run=server", "-f", "-"); err != nil {
		t.Errorf("a namespaced Role with the external name of a live legacy Role must be allowed: %v", err)
	}
}
