package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestHelmUninstallIsNotUndone installs the chart with helm itself, runs
// Steward as that release's Deployment would (keeping its registration,
// watching the release's Deployment), shows that it repairs a weakened
// entry, and then runs helm uninstall: Helm deletes the webhook
// configurations and the Deployment in one pass, and Steward, which is
// still running, never puts its configurations back.
func TestHelmUninstallIsNotUndone(t *testing.T) {
	helm := helmBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	const (
		ns      = "steward-uninstall"
		release = "steward" // its configurations are named after it: the harness's names
	)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("certificates:\n  mode: self-managed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		return string(runHelm(ctx, t, helm, append(args, "--kubeconfig", env.Kubeconfig)...))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = exec.CommandContext(ctx, helm, "uninstall", release, "--namespace", ns, "--ignore-not-found", "--kubeconfig", env.Kubeconfig).Run()
		if _, err := env.RestartSteward(ctx, harness.DefaultConfig); err != nil {
			t.Errorf("restoring the default Steward: %v", err)
		}
		_ = env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})

	// The release owns configurations of the harness's names: the
	// harness's own registration goes first, as the runbook removes it.
	deleteConfigurations(t, ctx)
	run("install", release, filepath.Join(root, "charts", "steward"), "--namespace", ns, "--create-namespace", "--values", values)
	in := parseInstall(t, "helm get manifest", []byte(run("get", "manifest", release, "--namespace", ns)), ns)
	// The release's entries name its Service, which has no endpoints here;
	// the harness points them at the Steward it runs, by URL. A URL beside
	// Helm's service field would be invalid: the service goes first.
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("admissionregistration.k8s.io/v1")
		u.SetKind(kind)
		if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, u); err != nil {
			t.Fatalf("the release's %s: %v", kind, err)
		}
		entries, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		for _, e := range entries {
			e.(map[string]any)["clientConfig"] = map[string]any{"url": "https://127.0.0.1:1/"}
		}
		_ = unstructured.SetNestedSlice(u.Object, entries, "webhooks")
		if err := env.Client.Update(ctx, u); err != nil {
			t.Fatalf("pointing the release's %s away from its Service: %v", kind, err)
		}
	}
	s, err := env.RestartStewardWith(ctx, harness.StewardOptions{Config: in.config, Args: in.certArgs, Namespace: ns,
		Webhooks: &in.webhooks, KeepRegistration: true})
	if err != nil {
		t.Fatalf("starting Steward as the release's Deployment runs it: %v", err)
	}

	// Steward keeps the release's registration: a weakened entry is put back.
	const fleet = "fleetguard.steward.dev"
	jsonPatch(t, ctx, fmt.Sprintf(`{"op":"replace","path":"/webhooks/%d/failurePolicy","value":"Ignore"}`, entryIndex(t, ctx, fleet)))
	harness.Eventually(t, repairWithin, func() error {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, vwc); err != nil {
			return err
		}
		if fp := vwc.Webhooks[entryIndex(t, ctx, fleet)].FailurePolicy; fp == nil || *fp != admissionregistrationv1.Fail {
			return fmt.Errorf("%s's failurePolicy is %v, want it put back to Fail", fleet, fp)
		}
		return nil
	})
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, vwc); err != nil {
		t.Fatal(err)
	}
	if got := vwc.Annotations["meta.helm.sh/release-name"]; got != release {
		t.Fatalf("the kept ValidatingWebhookConfiguration is not the release's (meta.helm.sh/release-name %q): helm uninstall would not delete it", got)
	}

	out := run("uninstall", release, "--namespace", ns)
	t.Logf("helm uninstall: %s", strings.TrimSpace(out))
	configurationsGone(t, ctx, 3*recreateWait, "after helm uninstall")
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: release}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("after helm uninstall, the Deployment %s/%s: %v, want it gone", ns, release, err)
	}
	if !strings.Contains(s.Log(), "Steward is being uninstalled") {
		t.Error("Steward did not log that it stopped keeping its registration for the uninstall")
	}
}
