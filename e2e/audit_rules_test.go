package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// rulesAuditConfig is auditConfig (a pass every 10 seconds) targeting
// Flux 2.8, which no longer serves helm.toolkit.fluxcd.io/v2beta2, and
// warning about Foreground deletions after a second.
const rulesAuditConfig = auditConfig + `rules:
  apimigration:
    fluxVersion: "2.8"
  claimguard:
    foregroundDeletionWarnAfter: 1s
`

// auditResults are the results of Steward's PolicyReport in namespace,
// or of its ClusterPolicyReport when namespace is empty; none when the
// report does not exist.
func auditResults(ctx context.Context, namespace string) ([]audit.Result, error) {
	u := &unstructured.Unstructured{}
	kind := "PolicyReport"
	if namespace == "" {
		kind = "ClusterPolicyReport"
	}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: audit.PolicyReportAPI().Namespaced.Group, Version: audit.PolicyReportAPI().Namespaced.Version, Kind: kind})
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
	harness.Eventually(t, auditTimeout, func() error {
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
	harness.Eventually(t, auditTimeout, func() error {
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

// The objects of TestAuditRuleChecks.
const (
	auditHelmCRD = "helmreleases.helm.toolkit.fluxcd.io"
	auditFleetNS = "audit-fleet"
)

// TestAuditRuleChecks seeds, through the real API server, each condition
// the audit checks of apimigration, claimguard and fleetguard look for:
// a Flux CRD storing a version the target release drops, an XR waiting in
// Foreground deletion, two live MRs sharing an external name, and a
// break-glass edit of a Fleet-managed Deployment. It waits for the
// background audit to report each in Steward's PolicyReports, with its
// properties and the denials' words, checks that `steward audit -o json`
// finds the same, fixes each condition and waits for its result to clear.
func TestAuditRuleChecks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	// The PolicyReport CRDs, and the default Steward once the test ends.
	startAuditingSteward(t, ctx)
	if _, err := env.RestartSteward(ctx, rulesAuditConfig); err != nil {
		t.Fatalf("starting steward with the rules' audit configuration: %v", err)
	}

	seedStoredVersions(t, ctx)
	seedForegroundDeletion(t, ctx)
	seedExternalNameCollision(t, ctx)
	agentApply := seedDrift(t, ctx)
	gitopsApply := seedGitOpsDrift(t, ctx)

	t.Run("ApimigrationStoredVersions", func(t *testing.T) {
		r := waitAuditResult(t, ctx, "apimigration", "stored-versions", "CustomResourceDefinition", "", auditHelmCRD, "fail")
		wantProperties(t, r, map[string]string{"storedVersions": "v2beta2,v2", "removedIn": "v2beta2: 2.8", "target": "2.8"})
		wantMessage(t, r, "apimigration: CustomResourceDefinition "+auditHelmCRD+" still lists helm.toolkit.fluxcd.io/v2beta2 in status.storedVersions, which Flux 2.8 no longer serves",
			"Run `flux migrate` (Flux CLI 2.7 or later) before upgrading to Flux 2.8")
		// The kustomize CRD every environment installs stores only v1.
		waitAuditResult(t, ctx, "apimigration", "stored-versions", "CustomResourceDefinition", "", "kustomizations.kustomize.toolkit.fluxcd.io", "pass")
	})
	t.Run("ClaimguardForegroundDeletion", func(t *testing.T) {
		r := waitAuditResult(t, ctx, "claimguard", "foreground-deletion", "XPostgreSQLInstance", "", "audit-fg", "warn")
		wantProperties(t, r, map[string]string{"blockedBy": "Database audit-fg-db"})
		if r.Properties["deletingSince"] == "" {
			t.Errorf("no deletingSince: %v", r.Properties)
		}
		wantMessage(t, r, "claimguard: XPostgreSQLInstance audit-fg has been deleting with Foreground propagation for more than 1s and is still held by 1 composed resource: ",
			`Database audit-fg-db (external name "audit-fg"; being deleted; finalizers: finalizer.managedresource.crossplane.io)`,
			"(kubectl get xpostgresqlinstances.database.example.org audit-fg)")
	})
	t.Run("ClaimguardExternalNameCollision", func(t *testing.T) {
		a := waitAuditResult(t, ctx, "claimguard", "external-name-collision", "Database", "", "audit-col-a", "fail")
		wantProperties(t, a, map[string]string{"externalName": "audit-shared", "others": "Database audit-col-b"})
		wantMessage(t, a, `claimguard: Database audit-col-a has external name "audit-shared", as Database audit-col-b does: they manage the same external resource`)
		b := waitAuditResult(t, ctx, "claimguard", "external-name-collision", "Database", "", "audit-col-b", "fail")
		wantProperties(t, b, map[string]string{"others": "Database audit-col-a"})
	})
	t.Run("FleetguardDrift", func(t *testing.T) {
		r := waitAuditResult(t, ctx, "fleetguard", "drift", "Deployment", auditFleetNS, "web", "fail")
		wantProperties(t, r, map[string]string{"managers": "kubectl-set", "fields": "/spec/template/spec/containers/[name=web]/image", "changes": "1"})
		wantMessage(t, r, "fleetguard: Deployment "+auditFleetNS+"/web is managed by Fleet (bundle deployment web-app, Helm release "+auditFleetNS+"/web-app)",
			"Changed since the Fleet agent last applied it, by kubectl-set: /spec/template/spec/containers/[name=web]/image.",
			"Change it in the Git repository instead; if the change is meant to stay, ignore the field in fleet.yaml (diff.comparePatches)")
	})
	t.Run("FluxguardDrift", func(t *testing.T) {
		r := waitAuditResult(t, ctx, "fluxguard", "drift", "Deployment", auditFluxNS, "web", "fail")
		wantProperties(t, r, map[string]string{"managers": "kubectl-set", "fields": "/spec/template/spec/containers/[name=web]/image", "changes": "1"})
		wantMessage(t, r, "fluxguard: Deployment "+auditFluxNS+"/web is managed by Flux Kustomization "+auditFluxNS+"/apps",
			"by kubectl-set: /spec/template/spec/containers/[name=web]/image.")
	})
	t.Run("ArgocdguardDrift", func(t *testing.T) {
		r := waitAuditResult(t, ctx, "argocdguard", "drift", "Deployment", auditArgoNS, "web", "fail")
		wantProperties(t, r, map[string]string{"managers": "kubectl-set", "fields": "/spec/template/spec/containers/[name=web]/image", "changes": "1"})
		wantMessage(t, r, "argocdguard: Deployment "+auditArgoNS+"/web is managed by Argo CD Application argocd/audit-web",
			"by kubectl-set: /spec/template/spec/containers/[name=web]/image.")
	})
	t.Run("StewardAuditFindsTheSame", func(t *testing.T) {
		config := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(config, []byte(rulesAuditConfig), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code, err := harness.RunCommand(ctx, "audit", "--kubeconfig", env.Kubeconfig, "--config", config, "-o", "json")
		if err != nil || code != 1 {
			t.Fatalf("steward audit: exit %d, %v, want 1 (findings fail)\nstderr: %s", code, err, stderr)
		}
		var out struct {
			Findings []struct {
				Policy, Rule, Result string
				Resource             struct{ Kind, Namespace, Name string }
			}
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("steward audit -o json printed what is not JSON: %v\n%s", err, stdout)
		}
		var got []string
		for _, f := range out.Findings {
			got = append(got, strings.Join([]string{f.Policy, f.Rule, f.Result, f.Resource.Kind, f.Resource.Namespace, f.Resource.Name}, "/"))
		}
		for _, w := range []string{
			"apimigration/stored-versions/fail/CustomResourceDefinition//" + auditHelmCRD,
			"claimguard/foreground-deletion/warn/XPostgreSQLInstance//audit-fg",
			"claimguard/external-name-collision/fail/Database//audit-col-a",
			"claimguard/external-name-collision/fail/Database//audit-col-b",
			"fleetguard/drift/fail/Deployment/" + auditFleetNS + "/web",
			"fluxguard/drift/fail/Deployment/" + auditFluxNS + "/web",
			"argocdguard/drift/fail/Deployment/" + auditArgoNS + "/web",
		} {
			if !slices.Contains(got, w) {
				t.Errorf("steward audit does not find %s; it found %v", w, got)
			}
		}
	})

	// Each condition is fixed: flux migrate trimmed the stored versions,
	// the provider and the garbage collector finished the deletion, one
	// MR got its own external name, and the agent applied the bundle
	// again.
	if err := setStoredVersions(ctx, auditHelmCRD, "v2"); err != nil {
		t.Fatal(err)
	}
	kubectlOK(t, ctx, "", "delete", "databases.postgresql.sql.crossplane.io", "audit-fg-db", "--wait=false")
	dropFinalizers(t, ctx, legacyDBGVK, "", "audit-fg-db")
	dropFinalizers(t, ctx, pgXRGVK, "", "audit-fg")
	kubectlOK(t, ctx, "", "annotate", "--overwrite", "databases.postgresql.sql.crossplane.io", "audit-col-b", "crossplane.io/external-name=audit-own")
	agentApply()
	gitopsApply()

	r := waitAuditResult(t, ctx, "apimigration", "stored-versions", "CustomResourceDefinition", "", auditHelmCRD, "pass")
	wantProperties(t, r, map[string]string{"storedVersions": "v2", "target": "2.8"})
	waitAuditCleared(t, ctx, "claimguard", "foreground-deletion", "XPostgreSQLInstance", "", "audit-fg")
	waitAuditCleared(t, ctx, "claimguard", "external-name-collision", "Database", "", "audit-col-a")
	waitAuditCleared(t, ctx, "claimguard", "external-name-collision", "Database", "", "audit-col-b")
	harness.Eventually(t, auditTimeout, func() error {
		r, err := policyReport(ctx, auditFleetNS)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("PolicyReport %s/steward still holds %v; want it deleted once the drift is gone", auditFleetNS, harness.ReportResults(r))
	})
	waitAuditCleared(t, ctx, "fluxguard", "drift", "Deployment", auditFluxNS, "web")
	waitAuditCleared(t, ctx, "argocdguard", "drift", "Deployment", auditArgoNS, "web")
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

// seedStoredVersions makes the HelmRelease CRD (Flux 2.6's, which every
// environment installs) list v2beta2, which the target 2.8 no longer
// serves, among its stored versions, as objects once stored through it
// leave it.
func seedStoredVersions(t *testing.T, ctx context.Context) {
	before := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: auditHelmCRD}, before); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := setStoredVersions(context.Background(), auditHelmCRD, before.Status.StoredVersions...); err != nil {
			t.Errorf("restoring the stored versions of %s: %v", auditHelmCRD, err)
		}
	})
	if err := setStoredVersions(ctx, auditHelmCRD, "v2beta2", "v2"); err != nil {
		t.Fatal(err)
	}
}

// seedForegroundDeletion deletes an XR with Foreground propagation while
// its composed Database holds it (no garbage collector runs here, so it
// holds it until the test lets go).
func seedForegroundDeletion(t *testing.T, ctx context.Context) {
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
	// The garbage collector deletes the XR's dependent; the provider's
	// finalizer keeps it, and it holds the XR.
	harness.Eventually(t, claimguardTimeout, func() error {
		db := &unstructured.Unstructured{}
		db.SetGroupVersionKind(legacyDBGVK)
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "audit-fg-db"}, db); err != nil {
			return err
		}
		if db.GetDeletionTimestamp() == nil {
			return errors.New("the garbage collector has not deleted Database audit-fg-db yet")
		}
		return nil
	})
}

// seedExternalNameCollision creates two live Databases with one external
// name, which nothing refuses: neither is being deleted.
func seedExternalNameCollision(t *testing.T, ctx context.Context) {
	for _, name := range []string{"audit-col-a", "audit-col-b"} {
		kubectlOK(t, ctx, `apiVersion: postgresql.sql.crossplane.io/v1alpha1
kind: Database
metadata:
  name: `+name+`
  annotations: {crossplane.io/external-name: audit-shared}
spec: {forProvider: {encoding: UTF8}}
`, "create", "-f", "-")
		t.Cleanup(func() {
			_, _, _ = env.Kubectl(context.Background(), "", "delete", "databases.postgresql.sql.crossplane.io", name, "--wait=false")
		})
	}
}

// seedDrift has the Fleet agent apply a Deployment and a break-glass
// member change its image with kubectl; it returns the agent's apply,
// which puts the image back.
func seedDrift(t *testing.T, ctx context.Context) (agentApply func()) {
	testNamespace(t, ctx, auditFleetNS)
	deployment := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ` + auditFleetNS + `
  labels: {app.kubernetes.io/managed-by: Helm, objectset.rio.cattle.io/hash: 3e4c9a2f6b0d8e1a7c5b9d3f2e6a8c0b4d7f1e9a}
  annotations: {meta.helm.sh/release-name: web-app, meta.helm.sh/release-namespace: ` + auditFleetNS + `, objectset.rio.cattle.io/id: default-web-app}
spec:
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/name: web}}
  template:
    metadata: {labels: {app.kubernetes.io/name: web}}
    spec: {containers: [{name: web, image: "ghcr.io/example/web:1.4.2"}]}
`
	// Helm, in the agent, applies server-side under the agent binary's
	// name. managedFields record whole seconds: each write comes in a
	// later second than the one before.
	agentApply = func() {
		time.Sleep(1100 * time.Millisecond)
		kubectlOK(t, ctx, deployment, "--as", fleetAgentUser, "--as-group", "system:serviceaccounts:cattle-fleet-system",
			"apply", "--server-side", "--force-conflicts", "--field-manager=fleetagent", "-f", "-")
	}
	agentApply()
	time.Sleep(1100 * time.Millisecond)
	kubectlOK(t, ctx, "", "--as", "jane", "--as-group", "steward:break-glass", "-n", auditFleetNS, "set", "image", "deployment/web", "web=ghcr.io/example/web:9.9.9")
	return agentApply
}

const (
	auditFluxNS = "audit-flux"
	auditArgoNS = "audit-argo"
)

// seedGitOpsDrift has kustomize-controller and Argo CD's application
// controller apply a Deployment each, as their owners' records list, and a
// break-glass member change both images with kubectl; it returns the
// controllers' applies, which put the images back.
func seedGitOpsDrift(t *testing.T, ctx context.Context) (controllersApply func()) {
	testNamespace(t, ctx, auditFluxNS)
	testNamespace(t, ctx, auditArgoNS)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNS}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	deployment := func(ns, meta string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ` + ns + `, ` + meta + `}
spec:
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/name: web}}
  template:
    metadata: {labels: {app.kubernetes.io/name: web}}
    spec: {containers: [{name: web, image: "ghcr.io/example/web:1.4.2"}]}
`
	}
	kubectlOK(t, ctx, `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: `+auditFluxNS+`}
spec: {interval: 10m, path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: apps}}
`, "--as", kustomizeUser, "apply", "-f", "-")
	kubectlOK(t, ctx, "", "--as", kustomizeUser, "-n", auditFluxNS, "patch", "kustomization", "apps", "--subresource=status", "--type=merge", "-p", harness.FluxInventoryStatus(auditFluxNS+"_web_apps_Deployment"))
	kubectlOK(t, ctx, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: audit-web, namespace: argocd}
spec:
  project: default
  source: {repoURL: "https://github.com/example/apps", path: web}
  destination: {server: "https://kubernetes.default.svc", namespace: `+auditArgoNS+`}
status:
  resources: [{group: apps, version: v1, kind: Deployment, namespace: `+auditArgoNS+`, name: web}]
`, "--as", argoController, "apply", "-f", "-")
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "--as", argoController, "-n", argoNS, "delete", "application", "audit-web", "--wait=false")
	})
	flux := deployment(auditFluxNS, `labels: {kustomize.toolkit.fluxcd.io/name: apps, kustomize.toolkit.fluxcd.io/namespace: `+auditFluxNS+`}`)
	argo := deployment(auditArgoNS, `annotations: {argocd.argoproj.io/tracking-id: "audit-web:apps/Deployment:`+auditArgoNS+`/web"}`)
	// The controllers apply server-side under their field managers;
	// managedFields record whole seconds, so each write comes a second
	// after the one before.
	controllersApply = func() {
		time.Sleep(1100 * time.Millisecond)
		kubectlOK(t, ctx, flux, "--as", kustomizeUser, "apply", "--server-side", "--force-conflicts", "--field-manager=kustomize-controller", "-f", "-")
		kubectlOK(t, ctx, argo, "--as", argoController, "apply", "--server-side", "--force-conflicts", "--field-manager=argocd-controller", "-f", "-")
	}
	controllersApply()
	time.Sleep(1100 * time.Millisecond)
	for _, ns := range []string{auditFluxNS, auditArgoNS} {
		kubectlOK(t, ctx, "", "--as", "jane", "--as-group", "steward:break-glass", "-n", ns, "set", "image", "deployment/web", "web=ghcr.io/example/web:9.9.9")
	}
	return controllersApply
}
