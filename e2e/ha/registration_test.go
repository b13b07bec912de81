package ha

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

const fluxEntry = "fluxguard.steward.dev"

// liveValidating reads Steward's ValidatingWebhookConfiguration.
func liveValidating(ctx context.Context) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, vwc)
	return vwc, err
}

// repairsReported sums steward_registration_repairs_total of fluxguard's
// entry over the replicas running now.
func repairsReported(t *testing.T) float64 {
	t.Helper()
	var sum float64
	for _, s := range replicas.Members() {
		n, err := s.Counter("steward_registration_repairs_total", map[string]string{"entry": fluxEntry})
		if err != nil {
			t.Fatalf("%s: %v", s.PodName(), err)
		}
		sum += n
	}
	return sum
}

// weakenAndWaitRepaired sets fluxguard's failurePolicy to Ignore, as a
// person would, and waits until Steward has put Fail back.
func weakenAndWaitRepaired(t *testing.T, ctx context.Context) time.Duration {
	t.Helper()
	vwc, err := liveValidating(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := -1
	for j, wh := range vwc.Webhooks {
		if wh.Name == fluxEntry {
			i = j
		}
	}
	if i < 0 {
		t.Fatalf("no entry %s", fluxEntry)
	}
	start := time.Now()
	kubectl(t, ctx, "", "patch", "validatingwebhookconfiguration", harness.WebhookConfigurationName, "--type=json",
		"-p", fmt.Sprintf(`[{"op":"replace","path":"/webhooks/%d/failurePolicy","value":"Ignore"}]`, i))
	var took time.Duration
	harness.Eventually(t, 10*time.Second, func() error {
		vwc, err := liveValidating(ctx)
		if err != nil {
			return err
		}
		for _, wh := range vwc.Webhooks {
			if wh.Name == fluxEntry && (wh.FailurePolicy == nil || *wh.FailurePolicy != admissionregistrationv1.Fail) {
				return fmt.Errorf("%s still has failurePolicy %v", fluxEntry, *wh.FailurePolicy)
			}
		}
		took = time.Since(start)
		return nil
	})
	return took
}

// settledGeneration waits a while and fails when the configuration's
// generation moved meanwhile: replicas that wrote against each other would
// bump it on every round.
func settledGeneration(t *testing.T, ctx context.Context, d time.Duration) {
	t.Helper()
	before, err := liveValidating(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	after, err := liveValidating(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Generation != before.Generation {
		t.Errorf("the configuration's generation went from %d to %d in %s with nobody changing it: Steward's replicas write against each other", before.Generation, after.Generation, d)
	}
}

// TestReplicasKeepTheRegistrationOnce proves that with three replicas
// (the rendered Deployment's count) one of them, the holder of the Lease
// steward-registration, puts a weakened entry back within seconds and
// reports it once; that the replicas do not fight while they render
// differently (one reloaded a configuration whose matchConditions differ,
// as during a rollout); and that a repair still happens within seconds
// after every replica in turn was replaced (a rolling restart moves the
// Lease).
func TestReplicasKeepTheRegistrationOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	replicas.LogOnFailure(t)
	healthy(t)

	before := repairsReported(t)
	t.Logf("put back after %s", weakenAndWaitRepaired(t, ctx).Round(10*time.Millisecond))
	time.Sleep(3 * time.Second) // a second writer would have reported by now
	if got := repairsReported(t) - before; got != 1 {
		t.Errorf("the replicas reported %v repairs of one change, want exactly 1 (one writer)", got)
	}
	settledGeneration(t, ctx, 5*time.Second)

	t.Run("RenderingDifferently", func(t *testing.T) {
		first := replicas.Members()[0]
		other := haConfig + "rules:\n  fleetguard:\n    agentUsers:\n    - system:serviceaccount:cattle-fleet-system:fleet-agent\n    - system:serviceaccount:gitops:other-agent\n"
		if err := first.WriteConfig(other); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := first.WriteConfig(haConfig); err != nil {
				t.Error(err)
			}
			time.Sleep(12 * time.Second) // reloaded within 10 s
		}()
		time.Sleep(12 * time.Second)
		settledGeneration(t, ctx, 8*time.Second)
	})

	t.Run("AfterARollingRestart", func(t *testing.T) {
		for _, s := range replicas.Members() {
			if err := s.Stop(); err != nil {
				t.Fatalf("%s: %v", s.PodName(), err)
			}
			if err := s.Restart(ctx); err != nil {
				t.Fatalf("starting %s again: %v", s.PodName(), err)
			}
			if err := replicas.Spreader.WaitInRotation(10*time.Second, s.PodName()); err != nil {
				t.Fatal(err)
			}
			t.Logf("after replacing %s: put back after %s", s.PodName(), weakenAndWaitRepaired(t, ctx).Round(10*time.Millisecond))
		}
		settledGeneration(t, ctx, 5*time.Second)
	})
}
