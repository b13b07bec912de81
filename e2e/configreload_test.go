package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// reloadTimeout bounds the wait for Steward to read a changed configuration
// file: it reads it every 10 s.
const reloadTimeout = 40 * time.Second

// configReloads is steward_config_reloads_total for result.
func configReloads(t *testing.T, result string) float64 {
	t.Helper()
	n, err := env.Steward.Counter("steward_config_reloads_total", map[string]string{"result": result})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// swapConfig writes content as a ConfigMap volume's new version and waits
// until Steward has judged it: its reloads with result (success or
// failure) went up by one.
func swapConfig(t *testing.T, content, result string) {
	t.Helper()
	before := configReloads(t, result)
	if err := env.Steward.WriteConfig(content); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, reloadTimeout, func() error {
		if n := configReloads(t, result); n != before+1 {
			return fmt.Errorf("steward_config_reloads_total{result=%q} is %v, want %v", result, n, before+1)
		}
		return nil
	})
}

// reloadHelmRelease is a HelmRelease written through v2beta2, which Flux
// 2.8 removed, in namespace ns.
func reloadHelmRelease(ns, name string) string {
	return fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2beta2
kind: HelmRelease
metadata:
  name: %s
  namespace: %s
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      sourceRef:
        kind: HelmRepository
        name: podinfo
`, name, ns)
}

// TestConfigReload changes the configuration file under a running Steward
// the way the kubelet changes a ConfigMap volume, and proves through the
// real API server and kubectl that a valid file changes what a rule
// decides without a restart (a rule setting, then an exempt user), and
// that an invalid one leaves every decision as it was, is counted as a
// failed reload, and is recorded as a Warning Event on Steward's Pod that
// names the field.
func TestConfigReload(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	pid := env.Steward.PID()
	t.Cleanup(func() {
		// Restore the default, and wait for it to take effect so the next
		// test meets it.
		before := configReloads(t, "success")
		if err := env.Steward.WriteConfig(harness.DefaultConfig); err != nil {
			t.Errorf("restoring the default configuration: %v", err)
			return
		}
		harness.Eventually(t, reloadTimeout, func() error {
			if n := configReloads(t, "success"); n <= before {
				return fmt.Errorf("the default configuration is not in effect yet")
			}
			return nil
		})
	})
	ns := testNamespace(t, ctx, "config-reload")
	apply := func(user, name string) (stderr string, err error) {
		_, stderr, err = env.Kubectl(ctx, reloadHelmRelease(ns, name), "--as", user, "apply", "-f", "-")
		return stderr, err
	}
	refusal := `admission webhook "apimigration.steward.dev" denied the request: apimigration: HelmRelease ` + ns + `/`

	// With the default target (Flux 2.6), v2beta2 is only deprecated. The
	// test's first change is a comment, so the default is reloaded (and
	// restored at the end) whatever the file held before.
	swapConfig(t, harness.DefaultConfig+"# the default\n", "success")
	if _, err := apply("jane", "before"); err != nil {
		t.Fatalf("a v2beta2 write with the default configuration: %v", err)
	}

	// A rule setting: Flux 2.8 removed v2beta2.
	swapConfig(t, apimigrationFlux28, "success")
	if _, err := apply("jane", "at-28"); err == nil || !strings.Contains(err.Error(), refusal+"at-28 is written through helm.toolkit.fluxcd.io/v2beta2, which Flux 2.8 removed") {
		t.Fatalf("a v2beta2 write after reloading fluxVersion 2.8: %v; want refused", err)
	}

	// An exempt user: jane's write is allowed, with a warning, bob's not.
	exempt := apimigrationFlux28 + "exemptUsers: [jane]\n"
	swapConfig(t, exempt, "success")
	stderr, err := apply("jane", "exempt")
	if err != nil || !strings.Contains(stderr, "allowed because jane is exempt") {
		t.Fatalf("jane's write after exempting her: %v\n%s\nwant allowed with the exemption's warning", err, stderr)
	}
	if _, err := apply("bob", "not-exempt"); err == nil || !strings.Contains(err.Error(), refusal+"not-exempt") {
		t.Fatalf("bob's write: %v; want refused", err)
	}

	// An invalid file: the release unquoted (YAML reads 2.10 as 2.1), and
	// jane no longer exempt. Neither takes effect.
	invalid := harness.DefaultConfig + "rules:\n  apimigration:\n    fluxVersion: 2.10\n"
	swapConfig(t, invalid, "failure")
	if stderr, err := apply("jane", "after-invalid"); err != nil || !strings.Contains(stderr, "allowed because jane is exempt") {
		t.Errorf("jane's write after an invalid file: %v\n%s\nwant still allowed as exempt", err, stderr)
	}
	if _, err := apply("bob", "after-invalid-bob"); err == nil || !strings.Contains(err.Error(), refusal+"after-invalid-bob") {
		t.Errorf("bob's write after an invalid file: %v; want still refused at Flux 2.8", err)
	}
	if n, err := env.Steward.Counter("steward_config_last_reload_successful", nil); err != nil || n != 0 {
		t.Errorf("steward_config_last_reload_successful = %v (%v), want 0", n, err)
	}
	if log := env.Steward.Log(); !strings.Contains(log, `"configuration refused: keeping the last good configuration"`) || !strings.Contains(log, "rules.apimigration.fluxVersion") {
		t.Errorf("no log line refusing the file and naming rules.apimigration.fluxVersion:\n%s", env.Steward.LogTail(20))
	}
	var event eventsv1.Event
	harness.Eventually(t, 30*time.Second, func() error {
		var list eventsv1.EventList
		if err := env.Client.List(ctx, &list, client.InNamespace(harness.StewardNamespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == "StewardConfigRejected" && e.Regarding.Kind == "Pod" && e.Regarding.Name == env.Steward.PodName() {
				event = e
				return nil
			}
		}
		return fmt.Errorf("no StewardConfigRejected Event about Pod %s among %d Events", env.Steward.PodName(), len(list.Items))
	})
	if event.Type != "Warning" || !strings.Contains(event.Note, "rules.apimigration.fluxVersion") || !strings.Contains(event.Note, "last good configuration stays in effect") {
		t.Errorf("Event %s %s: %q; want a Warning naming rules.apimigration.fluxVersion", event.Type, event.Reason, event.Note)
	}

	// Fixed: takes effect again.
	swapConfig(t, apimigrationFlux28, "success")
	if _, err := apply("jane", "fixed"); err == nil || !strings.Contains(err.Error(), refusal+"fixed") {
		t.Errorf("jane's write after the fixed file dropped her exemption: %v; want refused", err)
	}
	if env.Steward.PID() != pid {
		t.Error("steward restarted: the changes were to take effect without one")
	}
}
