package manifests

import (
	"strings"
	"testing"
	"time"
)

// TestDefaultsKeepAdmissionAvailableThroughDisruptions checks the defaults
// e2e/ha runs its replicas with (rolling upgrades, drains, crashes under
// load, docs/reliability.md): several replicas, at most one of them
// unavailable at a time, by a rollout or by evictions, and a grace period
// that lets a replica finish its shutdown (the delay, then the drain
// within the timeout) before the kubelet kills it.
func TestDefaultsKeepAdmissionAvailableThroughDisruptions(t *testing.T) {
	in := install{ns: DefaultNamespace, image: "steward"}
	d := in.deployment()
	if n := *d.Spec.Replicas; n < 3 {
		t.Errorf("replicas %d: want at least 3, so that two serve while one is replaced", n)
	}
	if u := d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue(); u != 1 {
		t.Errorf("the rollout's maxUnavailable is %d, want 1", u)
	}
	if u := in.podDisruptionBudget().Spec.MaxUnavailable.IntValue(); u != 1 {
		t.Errorf("the PodDisruptionBudget's maxUnavailable is %d, want 1", u)
	}
	flags := map[string]time.Duration{}
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		for _, name := range []string{"--shutdown-delay=", "--shutdown-timeout="} {
			if v, ok := strings.CutPrefix(a, name); ok {
				dur, err := time.ParseDuration(v)
				if err != nil {
					t.Fatalf("%s: %v", a, err)
				}
				flags[name] = dur
			}
		}
	}
	delay, timeout := flags["--shutdown-delay="], flags["--shutdown-timeout="]
	if delay < 3*time.Second || timeout <= 0 {
		t.Fatalf("--shutdown-delay %s, --shutdown-timeout %s: want both set, the delay long enough for endpoints to drop a terminating Pod", delay, timeout)
	}
	grace := time.Duration(*d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	if grace < delay+timeout+5*time.Second {
		t.Errorf("terminationGracePeriodSeconds %s: want at least --shutdown-delay (%s) + --shutdown-timeout (%s) + 5 s to stop the rest", grace, delay, timeout)
	}
}
