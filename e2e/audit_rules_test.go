package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
	"github.com/stewardhq/steward/webhooks/audit"
)

// rulesAuditConfig runs the background audit every 10 seconds (the
// shortest interval accepted), targets Flux 2.8 (which no longer serves
// helm.toolkit.fluxcd.io/v2beta2) and warns about Foreground deletions
// after a second.
const rulesAuditConfig = harness.DefaultConfig + `audit:
  interval: 10s
rules:
  apimigration:
    fluxVersion: "2.8"
  claimguard:
    foregroundDeletionWarnAfter: 1s
`

// rulesAuditTimeout bounds the wait for a pass to see a change: the
// caches follow at once, a pass runs every 10 seconds.
const rulesAuditTimeout = 60 * time.Second

// installPolicyReportCRDs installs the PolicyReport CRDs Steward ships,
// unless they are installed, and removes what it installed when the test
// ends.
func installPolicyReportCRDs(t *testing.T, ctx context.Context) {
	t.Helper()
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"policyreports", "clusterpolicyreports"} {
		crd := name + ".wgpolicyk8s.io"
		err := env.Client.Get(ctx, client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{})
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		kubectlOK(t, ctx, "", "create", "-f", filepath.Join(root, "manifests", "upstream", "wgpolicyk8s.io_"+name+".yaml"))
		t.Cleanup(func() {
			_ = env.Client.Delete(context.Background(), &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd}})
		})
		kubectlOK(t, ctx, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/"+crd)
	}
}

// auditResults are the results of Steward's PolicyReport in namespace,
// or of its ClusterPolicyReport when namespace is empty; none when the
// report does not exist.
func auditResults(ctx context.Context, namespace string) ([]audit.Result, error) {
	u := &unstructured.Unstructured{}
	kind := "PolicyReport"
	if namespace == "" {
		kind = "ClusterPolicyReport"
	}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: audit.PolicyReports.Group, Version: audit.PolicyReports.Version, Kind: kind})
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: audit.ReportName}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	raw, err := json.Marshal(u.Object["results"])
	if err != nil {
		return nil, err
	}
	var out []audit.Result
	return out, json.Unmarshal(raw, &out)
}

// auditResultFor is the result of policy's check about the object kind
// namespace/name, or nil.
func auditResultFor(ctx context.Context, policy, check, kind, namespace, name string) (*audit.Result, error) {
	results, err := auditResults(ctx, namespace)
	if err != nil {
		return nil, err
	}
	for i, r := range results {
		if r.Policy != policy || r.Rule != check || len(r.Resources) == 0 {
			continue
		}
		if o := r.Resources[0]; o.Kind == kind && o.Namespace == namespace && o.Name == name {
			return &results[i], nil
		}
	}
	return nil, nil
}

// waitAuditResult waits until the report holds policy's check about the
// object with verdict want, and returns it.
func waitAuditResult(t *testing.T, ctx context.Context, policy, check, kind, namespace, name, want string) audit.Result {
	t.Helper()
	var got *audit.Result
	harness.Eventually(t, rulesAuditTimeout, func() error {
		var err error
		if got, err = auditResultFor(ctx, policy, check, kind, namespace, name); err != nil {
			return err
		}
		if got == nil || got.Result != want {
			return fmt.Errorf("the report has no %s %s/%s result %q about %s %s/%s yet (got %+v)", policy, check, want, want, kind, namespace, name, got)
		}
		return nil
	})
	return *got
}

// waitAuditCleared waits until the report holds no result of policy's
// check about the object.
func waitAuditCleared(t *testing.T, ctx context.Context, policy, check, kind, namespace, name string) {
	t.Helper()
	harness.Eventually(t, rulesAuditTimeout, func() error {
		got, err := auditResultFor(ctx, policy, check, kind, namespace, name)
		if err != nil {
			return err
		}
		if got != nil {
			return fmt.Errorf("the report still holds %+v", got)
		}
		return nil
	})
}

func wantProperties(t *testing.T, r audit.Result, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if r.Properties[k] != v {
			t.Errorf("%s/%s property %s = %q, want %q (all: %v)", r.Policy, r.Rule, k, r.Properties[k], v, r.Properties)
		}
	}
}

func wantMessage(t *testing.T, r audit.Result, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(r.Message, p) {
			t.Errorf("%s/%s message does not say %q:\n%s", r.Policy, r.Rule, p, r.Message)
		}
	}
}

// TestAuditRuleChecks seeds, through the real API server, each condition
// the audit checks of apimigration, claimguard and fleetguard look for,
// waits for the background audit to report it in Steward's
// PolicyReports, fixes it, and waits for the result to clear.
func TestAuditRuleChecks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	installPolicyReportCRDs(t, ctx)
	if _, err := env.RestartSteward(ctx, rulesAuditConfig); err != nil {
		t.Fatalf("starting steward with the audit configuration: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := env.RestartSteward(ctx, harness.DefaultConfig); err != nil {
			t.Errorf("restoring steward's default configuration: %v", err)
		}
	})

	t.Run("ApimigrationStoredVersions", func(t *testing.T) { auditStoredVersions(t, ctx) })
	t.Run("ClaimguardForegroundDeletion", func(t *testing.T) { auditForegroundDeletion(t, ctx) })
	t.Run("ClaimguardExternalNameCollision", func(t *testing.T) { auditExternalNameCollision(t, ctx) })
	t.Run("FleetguardDrift", func(t *testing.T) { auditDrift(t, ctx) })
}

// setStoredVersions writes a CRD's status.storedVersions, as the API
// server keeps it after objects were stored through each version.
func setStoredVersions(ctx context.Context, crd string, versions ...string) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"storedVersions": versions}})
	if err != nil {
		return err
	}
	obj := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd}}
	return env.Client.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

// auditStoredVersions: the HelmRelease CRD (Flux 2.6's, which every
// environment installs) lists v2beta2, which the target 2.8 no longer
// serves, among its stored versions; once `flux migrate` would have
// trimmed the list, the CRD passes.
func auditStoredVersions(t *testing.T, ctx context.Context) {
	const crd = "helmreleases.helm.toolkit.fluxcd.io"
	before := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: crd}, before); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := setStoredVersions(context.Background(), crd, before.Status.StoredVersions...); err != nil {
			t.Errorf("restoring the stored versions of %s: %v", crd, err)
		}
	})
	if err := setStoredVersions(ctx, crd, "v2beta2", "v2"); err != nil {
		t.Fatal(err)
	}
	r := waitAuditResult(t, ctx, "apimigration", "stored-versions", "CustomResourceDefinition", "", crd, "fail")
	wantProperties(t, r, map[string]string{"storedVersions": "v2beta2,v2", "removedIn": "v2beta2: 2.8", "target": "2.8"})
	wantMessage(t, r, "apimigration: CustomResourceDefinition "+crd+" still lists helm.toolkit.fluxcd.io/v2beta2 in status.storedVersions, which Flux 2.8 no longer serves",
		"Run `flux migrate` (Flux CLI 2.7 or later) before upgrading to Flux 2.8")

	if err := setStoredVersions(ctx, crd, "v2"); err != nil {
		t.Fatal(err)
	}
	r = waitAuditResult(t, ctx, "apimigration", "stored-versions", "CustomResourceDefinition", "", crd, "pass")
	wantProperties(t, r, map[string]string{"storedVersions": "v2", "target": "2.8"})
}

// auditForegroundDeletion: an XR deleted with Foreground propagation waits
// for its composed Database (no garbage collector runs here, so it waits
// for good); after the threshold the audit warns, naming the Database;
// once the XR is gone the warning clears.
func auditForegroundDeletion(t *testing.T, ctx context.Context) {
	xr := createUnstructured(t, ctx, `apiVersion: database.example.org/v1alpha1
kind: XPostgreSQLInstance
metadata:
  name: audit-fg
  finalizers: [`+xrFinalizer+`]
spec:
  resourceRefs:
  - {apiVersion: postgresql.sql.crossplane.io/v1alpha1, kind: Database, name: audit-fg-db}
`)
	t.Cleanup(func() {
		dropFinalizers(t, context.Background(), legacyDBGVK, "", "audit-fg-db")
		dropFinalizers(t, context.Background(), pgXRGVK, "", "audit-fg")
	})
	kubectlOK(t, ctx, composedDB("audit-fg-db", "database.example.org/v1alpha1", "XPostgreSQLInstance", "audit-fg", xr.GetUID(), "audit-fg", "", false),
		"--as", crossplaneUser, "create", "-f", "-")
	kubectlOK(t, ctx, "", "delete", "xpostgresqlinstance", "audit-fg", "--cascade=foreground", "--wait=false")

	r := waitAuditResult(t, ctx, "claimguard", "foreground-deletion", "XPostgreSQLInstance", "", "audit-fg", "warn")
	wantProperties(t, r, map[string]string{"blockedBy": "Database audit-fg-db"})
	if r.Properties["deletingSince"] == "" {
		t.Errorf("no deletingSince: %v", r.Properties)
	}
	wantMessage(t, r, "claimguard: XPostgreSQLInstance audit-fg has been deleting with Foreground propagation for more than 1s and is still held by 1 composed resource: ",
		`Database audit-fg-db (external name "audit-fg"; finalizers: finalizer.managedresource.crossplane.io)`,
		"(kubectl get xpostgresqlinstances.database.example.org audit-fg)")

	// The provider and the garbage collector finish.
	kubectlOK(t, ctx, "", "delete", "databases.postgresql.sql.crossplane.io", "audit-fg-db", "--wait=false")
	dropFinalizers(t, ctx, legacyDBGVK, "", "audit-fg-db")
	dropFinalizers(t, ctx, pgXRGVK, "", "audit-fg")
	waitAuditCleared(t, ctx, "claimguard", "foreground-deletion", "XPostgreSQLInstance", "", "audit-fg")
}

// auditExternalNameCollision: two live Databases share an external name,
// created while nothing refused it; both fail, each naming the other, until
// one is given its own external name.
func auditExternalNameCollision(t *testing.T, ctx context.Context) {
	db := func(name string) string {
		return `apiVersion: postgresql.sql.crossplane.io/v1alpha1
kind: Database
metadata:
  name: ` + name + `
  annotations: {crossplane.io/external-name: audit-shared}
spec: {forProvider: {encoding: UTF8}}
`
	}
	for _, name := range []string{"audit-col-a", "audit-col-b"} {
		kubectlOK(t, ctx, db(name), "create", "-f", "-")
		t.Cleanup(func() {
			_, _, _ = env.Kubectl(context.Background(), "", "delete", "databases.postgresql.sql.crossplane.io", name, "--wait=false")
		})
	}
	a := waitAuditResult(t, ctx, "claimguard", "external-name-collision", "Database", "", "audit-col-a", "fail")
	wantProperties(t, a, map[string]string{"externalName": "audit-shared", "others": "Database audit-col-b"})
	wantMessage(t, a, `claimguard: Database audit-col-a has external name "audit-shared", as Database audit-col-b does: they manage the same external resource`)
	b := waitAuditResult(t, ctx, "claimguard", "external-name-collision", "Database", "", "audit-col-b", "fail")
	wantProperties(t, b, map[string]string{"others": "Database audit-col-a"})

	kubectlOK(t, ctx, "", "annotate", "--overwrite", "databases.postgresql.sql.crossplane.io", "audit-col-b", "crossplane.io/external-name=audit-own")
	waitAuditCleared(t, ctx, "claimguard", "external-name-collision", "Database", "", "audit-col-a")
	waitAuditCleared(t, ctx, "claimguard", "external-name-collision", "Database", "", "audit-col-b")
}

// auditDrift: the Fleet agent applies a Deployment; a break-glass member
// changes its image with kubectl; the audit reports the drift with the
// manager and the field, until the agent applies the bundle again.
func auditDrift(t *testing.T, ctx context.Context) {
	const ns = "audit-fleet"
	kubectlOK(t, ctx, "", "create", "namespace", ns)
	t.Cleanup(func() { _, _, _ = env.Kubectl(context.Background(), "", "delete", "namespace", ns, "--wait=false") })
	deployment := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ` + ns + `
  labels: {app.kubernetes.io/managed-by: Helm, objectset.rio.cattle.io/hash: 3e4c9a2f6b0d8e1a7c5b9d3f2e6a8c0b4d7f1e9a}
  annotations: {meta.helm.sh/release-name: web-app, meta.helm.sh/release-namespace: ` + ns + `, objectset.rio.cattle.io/id: default-web-app}
spec:
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/name: web}}
  template:
    metadata: {labels: {app.kubernetes.io/name: web}}
    spec: {containers: [{name: web, image: "ghcr.io/example/web:1.4.2"}]}
`
	// Helm, in the agent, applies server-side under the agent binary's name.
	agentApply := func() {
		kubectlOK(t, ctx, deployment, "--as", fleetAgentUser, "--as-group", "system:serviceaccounts:cattle-fleet-system",
			"apply", "--server-side", "--force-conflicts", "--field-manager=fleetagent", "-f", "-")
	}
	agentApply()
	// managedFields record whole seconds: the edit comes in a later one.
	time.Sleep(1100 * time.Millisecond)
	kubectlOK(t, ctx, "", "--as", "jane", "--as-group", "steward:break-glass", "-n", ns, "set", "image", "deployment/web", "web=ghcr.io/example/web:9.9.9")

	r := waitAuditResult(t, ctx, "fleetguard", "drift", "Deployment", ns, "web", "fail")
	wantProperties(t, r, map[string]string{"managers": "kubectl-set", "fields": "/spec/template/spec/containers/[name=web]/image", "changes": "1"})
	wantMessage(t, r, "fleetguard: Deployment "+ns+"/web is managed by Fleet (bundle deployment web-app, Helm release "+ns+"/web-app)",
		"Changed since the Fleet agent last applied it, by kubectl-set: /spec/template/spec/containers/[name=web]/image.",
		"Change it in the Git repository instead; if the change is meant to stay, ignore the field in fleet.yaml (diff.comparePatches)")

	time.Sleep(1100 * time.Millisecond)
	agentApply()
	waitAuditCleared(t, ctx, "fleetguard", "drift", "Deployment", ns, "web")
}
