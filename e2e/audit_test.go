package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/google/go-cmp/cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stewardhq/steward/e2e/harness"
)

// auditConfig runs the background audit every ten seconds, the shortest
// interval Steward accepts.
const auditConfig = harness.DefaultConfig + "audit:\n  interval: 10s\n"

// auditTimeout bounds each wait for the reports: a pass every 10 s, and
// the informers hearing of the change first.
const auditTimeout = 60 * time.Second

// TestAuditPublishesPolicyReports runs Steward with the PolicyReport CRDs
// Steward ships and a short audit interval, and proves through the API
// server that what already sits in the cluster is reported: a Flux
// Kustomization suspended through Steward (so it carries the suspension
// record) is a warning naming who suspended it and when, and a
// Subscription OLM marked InstallPlanMissing is a failure. `steward audit
// -o json` against the same API server prints the same findings. Once the
// Kustomization is resumed and OLM has a new plan, the results clear and
// the namespace's report is deleted. A report whose results stay the same
// is not written again. The replica that audits holds the Lease
// steward-leader.
func TestAuditPublishesPolicyReports(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	startAuditingSteward(t, ctx)
	ns := testNamespace(t, ctx, fmt.Sprintf("audit-%d", time.Now().UnixNano()%1_000_000))

	// A Kustomization alice suspends: Steward records who and when.
	ks := harness.SuspendedKustomization(ns, "web")
	alice, err := env.As("alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := alice.Create(ctx, ks); err != nil {
		t.Fatalf("creating a suspended Kustomization: %v", err)
	}
	suspendedAt := ks.GetAnnotations()[snSuspendedAt]
	if ks.GetAnnotations()[snSuspendedBy] != "alice" || suspendedAt == "" {
		t.Fatalf("Steward did not record the suspension: annotations %v", ks.GetAnnotations())
	}

	// A Subscription whose plan is gone, as OLM reports it.
	sub := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": olmAPIVersion,
		"kind":       "Subscription",
		"metadata":   map[string]any{"name": "etcd", "namespace": ns},
		"spec":       map[string]any{"channel": "singlenamespace-alpha", "name": "etcd", "source": ipgCatalog, "sourceNamespace": "olm"},
	}}
	if err := env.Client.Create(ctx, sub); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	ipgSetStatus(ctx, t, sub, map[string]any{
		"lastUpdated":    now,
		"state":          "UpgradePending",
		"installPlanRef": map[string]any{"apiVersion": olmAPIVersion, "kind": "InstallPlan", "name": "install-gone", "namespace": ns},
		"conditions": []any{map[string]any{
			"type": "InstallPlanMissing", "status": "True", "reason": "ReferencedInstallPlanNotFound", "lastTransitionTime": now,
		}},
	})

	want := []string{
		"installplanguard/installplan-missing/fail/Subscription/etcd",
		"suspendnotice/suspended/warn/Kustomization/web",
	}
	var report *unstructured.Unstructured
	harness.Eventually(t, auditTimeout, func() error {
		report, err = policyReport(ctx, ns)
		if err != nil {
			return err
		}
		if got := harness.ReportResults(report); !slices.Equal(got, want) {
			return fmt.Errorf("PolicyReport %s/steward holds %v, want %v", ns, got, want)
		}
		return nil
	})
	// The OpenReports CRDs are installed too: the same results in a Report.
	var open *unstructured.Unstructured
	harness.Eventually(t, auditTimeout, func() error {
		open, err = openReport(ctx, ns)
		if err != nil {
			return err
		}
		if got := harness.ReportResults(open); !slices.Equal(got, want) {
			return fmt.Errorf("Report %s/steward holds %v, want %v", ns, got, want)
		}
		return nil
	})

	t.Run("TheOpenReportsReportHoldsTheSameResults", func(t *testing.T) {
		if src, _, _ := unstructured.NestedString(open.Object, "source"); src != "steward" {
			t.Errorf("Report source = %q, want steward", src)
		}
		a, _, _ := unstructured.NestedSlice(report.Object, "results")
		b, _, _ := unstructured.NestedSlice(open.Object, "results")
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("the PolicyReport's and the Report's results differ (-PolicyReport +Report):\n%s", diff)
		}
		for _, r := range b {
			m := r.(map[string]any)
			if m["category"] != m["policy"] || m["severity"] == nil || m["scored"] != true {
				t.Errorf("%v: category %v, severity %v, scored %v; want Policy Reporter's fields filled", m["policy"], m["category"], m["severity"], m["scored"])
			}
		}
	})

	t.Run("TheReportHoldsEachFindingsDetails", func(t *testing.T) {
		if got := report.GetLabels()["app.kubernetes.io/managed-by"]; got != "steward" {
			t.Errorf("label app.kubernetes.io/managed-by = %q, want steward", got)
		}
		results, _, _ := unstructured.NestedSlice(report.Object, "results")
		wantProps := map[string]map[string]any{
			"installplanguard": {"installPlan": ns + "/install-gone", "condition": "InstallPlanMissing", "reason": "ReferencedInstallPlanNotFound", "state": "UpgradePending"},
			"suspendnotice":    {"suspendedBy": "alice", "suspendedAt": suspendedAt},
		}
		for _, r := range results {
			m := r.(map[string]any)
			policy := m["policy"].(string)
			if m["source"] != "steward" {
				t.Errorf("%s: source = %v, want steward", policy, m["source"])
			}
			props, _ := m["properties"].(map[string]any)
			for k, v := range wantProps[policy] {
				if props[k] != v {
					t.Errorf("%s: properties[%s] = %v, want %v (all: %v)", policy, k, props[k], v, props)
				}
			}
			resources, _ := m["resources"].([]any)
			if len(resources) != 1 || resources[0].(map[string]any)["namespace"] != ns {
				t.Errorf("%s: resources = %v, want the one object in %s", policy, resources, ns)
			}
			if msg, _ := m["message"].(string); msg == "" {
				t.Errorf("%s: no message", policy)
			}
		}
		for verdict, n := range map[string]int64{"fail": 1, "warn": 1, "pass": 0} {
			if got, _, _ := unstructured.NestedInt64(report.Object, "summary", verdict); got != n {
				t.Errorf("summary.%s = %d, want %d", verdict, got, n)
			}
		}
		if v, err := env.Steward.Counter("steward_audit_results", map[string]string{"rule": "installplanguard", "result": "fail"}); err != nil || v < 1 {
			t.Errorf("steward_audit_results{rule=installplanguard,result=fail} = %v, %v; want at least 1", v, err)
		}
	})

	t.Run("AnUnchangedReportIsNotWrittenAgain", func(t *testing.T) {
		// Two more passes find the same: the report keeps its
		// resourceVersion.
		time.Sleep(22 * time.Second)
		again, err := policyReport(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		if again.GetResourceVersion() != report.GetResourceVersion() {
			t.Errorf("the report was written again (resourceVersion %s, then %s) though its results did not change: %v", report.GetResourceVersion(), again.GetResourceVersion(), harness.ReportResults(again))
		}
		openAgain, err := openReport(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		if openAgain.GetResourceVersion() != open.GetResourceVersion() {
			t.Errorf("the Report was written again (resourceVersion %s, then %s) though its results did not change", open.GetResourceVersion(), openAgain.GetResourceVersion())
		}
	})

	t.Run("StewardAuditPrintsTheSameFindings", func(t *testing.T) {
		config := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(config, []byte(auditConfig), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code, err := harness.RunCommand(ctx, "audit", "--kubeconfig", env.Kubeconfig, "--config", config, "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		if code != 1 {
			t.Fatalf("steward audit exited %d, want 1 (a finding fails)\nstderr: %s", code, stderr)
		}
		var out struct {
			Findings []struct {
				Policy, Rule, Result string
				Resource             struct{ Kind, Namespace, Name string }
			}
			Summary struct{ ExitCode int }
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("steward audit -o json printed what is not JSON: %v\n%s", err, stdout)
		}
		var got []string
		for _, f := range out.Findings {
			if f.Resource.Namespace == ns {
				got = append(got, strings.Join([]string{f.Policy, f.Rule, f.Result, f.Resource.Kind, f.Resource.Name}, "/"))
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) || out.Summary.ExitCode != 1 {
			t.Errorf("steward audit found %v in %s (exitCode %d), want the report's %v", got, ns, out.Summary.ExitCode, want)
		}
	})

	t.Run("TheAuditingReplicaHoldsTheLease", func(t *testing.T) {
		host, err := os.Hostname()
		if err != nil {
			t.Fatal(err)
		}
		lease := &coordinationv1.Lease{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: harness.StewardNamespace, Name: "steward-leader"}, lease); err != nil {
			t.Fatalf("the Lease steward-leader in %s: %v", harness.StewardNamespace, err)
		}
		if holder := lease.Spec.HolderIdentity; holder == nil || !strings.HasPrefix(*holder, host+"_") {
			t.Errorf("the Lease is held by %v, want this host's Steward (%s_...)", holder, host)
		}
	})

	// Resumed, and OLM has planned the install anew: nothing is left to
	// report in the namespace.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))
	if err := alice.Patch(ctx, ks, patch); err != nil {
		t.Fatalf("resuming the Kustomization: %v", err)
	}
	plan := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": olmAPIVersion,
		"kind":       "InstallPlan",
		"metadata":   map[string]any{"name": "install-new", "namespace": ns},
		"spec":       map[string]any{"approval": "Automatic", "approved": true, "clusterServiceVersionNames": []any{ipgCSV}},
	}}
	plan.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: olmAPIVersion, Kind: "Subscription", Name: sub.GetName(), UID: sub.GetUID()}})
	if err := env.Client.Create(ctx, plan); err != nil {
		t.Fatal(err)
	}
	ipgSetStatus(ctx, t, plan, map[string]any{"phase": "Complete", "catalogSources": []any{ipgCatalog}})
	now = time.Now().UTC().Format(time.RFC3339)
	ipgSetStatus(ctx, t, sub, map[string]any{
		"lastUpdated":    now,
		"state":          "AtLatestKnown",
		"installPlanRef": map[string]any{"apiVersion": olmAPIVersion, "kind": "InstallPlan", "name": "install-new", "namespace": ns},
		"conditions": []any{map[string]any{
			"type": "InstallPlanMissing", "status": "False", "lastTransitionTime": now,
		}},
	})
	harness.Eventually(t, auditTimeout, func() error {
		r, err := policyReport(ctx, ns)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("PolicyReport %s/steward still holds %v; want it deleted once nothing is left to report", ns, harness.ReportResults(r))
	})
	harness.Eventually(t, auditTimeout, func() error {
		r, err := openReport(ctx, ns)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("Report %s/steward still holds %v; want it deleted once nothing is left to report", ns, harness.ReportResults(r))
	})
}

// startAuditingSteward installs the PolicyReport CRDs Steward ships and
// restarts Steward with auditConfig, undoing both when t ends.
func startAuditingSteward(t *testing.T, ctx context.Context) {
	t.Helper()
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// CRDs removed by an earlier test may still be terminating: installed
	// over, they would vanish from under this one.
	policyReportCRDsGone(t, ctx)
	crds, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(root, "manifests", "policyreport-crds", "policyreports.yaml"),
		filepath.Join(root, "manifests", "policyreport-crds", "clusterpolicyreports.yaml"),
		filepath.Join(root, "e2e", "upstream", "openreports"),
	}, ErrorIfPathMissing: true})
	if err != nil {
		t.Fatalf("installing the PolicyReport CRDs Steward ships and OpenReports' CRDs: %v", err)
	}
	t.Cleanup(func() {
		if err := envtest.UninstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
			t.Errorf("removing the report CRDs: %v", err)
		}
		policyReportCRDsGone(t, context.Background())
	})
	if _, err := env.RestartSteward(ctx, auditConfig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := env.RestartSteward(context.Background(), harness.DefaultConfig); err != nil {
			t.Errorf("restoring the default Steward: %v", err)
		}
	})
}

// policyReportCRDsGone waits until no PolicyReport CRD exists, deleted
// or being deleted.
func policyReportCRDsGone(t *testing.T, ctx context.Context) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() error {
		for _, name := range []string{"policyreports.wgpolicyk8s.io", "clusterpolicyreports.wgpolicyk8s.io", "reports.openreports.io", "clusterreports.openreports.io"} {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return err
			default:
				return fmt.Errorf("the CRD %s still exists (deleting: %v)", name, crd.DeletionTimestamp != nil)
			}
		}
		return nil
	})
}

// policyReport reads Steward's PolicyReport in ns.
func policyReport(ctx context.Context, ns string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("wgpolicyk8s.io/v1alpha2")
	u.SetKind("PolicyReport")
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "steward"}, u)
	return u, err
}

// openReport reads Steward's OpenReports Report in ns.
func openReport(ctx context.Context, ns string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("openreports.io/v1alpha1")
	u.SetKind("Report")
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "steward"}, u)
	return u, err
}
