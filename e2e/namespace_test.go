package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestStewardRunsInAnyNamespace runs Steward in steward-ops with the
// webhook configurations `steward manifests --namespace steward-ops`
// renders, and proves it works end to end there: guarded writes get its
// denial, its own namespace is never sent to it (so it can always recover
// itself), and steward-system is no longer special.
func TestStewardRunsInAnyNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	const ns = "steward-ops"
	if _, err := env.RestartStewardWith(ctx, harness.StewardOptions{Config: harness.DefaultConfig, ProvideCerts: true, Namespace: ns}); err != nil {
		t.Fatalf("starting steward in %s: %v", ns, err)
	}
	restoreDefaultSteward(t)
	if !strings.Contains(env.Steward.Log(), `"namespace":"`+ns+`"`) {
		t.Errorf("Steward's start-up log does not name its namespace %s", ns)
	}
	jane, err := env.As("jane", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	spoofed := func(namespace string) error {
		meta := fleetMeta("spoofed-in-" + namespace)
		meta.Namespace = namespace
		return jane.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta})
	}
	for _, namespace := range []string{"default", harness.StewardNamespace} {
		if err := spoofed(namespace); err == nil || !strings.Contains(err.Error(), fleetguardHook) {
			t.Errorf("a ConfigMap with Fleet's keys in %s: %v; want fleetguard's denial", namespace, err)
		}
	}
	unchangedCalls(t, fleetguardPath, func() {
		if err := spoofed(ns); err != nil {
			t.Errorf("a write in Steward's own namespace %s reached a webhook: %v", ns, err)
		}
	})
}
