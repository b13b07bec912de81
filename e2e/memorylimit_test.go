package e2e

import (
	"testing"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestSoftMemoryLimitFollowsTheContainerLimit proves that Steward, given
// its container's memory limit as the rendered Deployment gives it
// ($MEMORY_LIMIT from the Downward API, in bytes), runs with Go's soft memory
// limit at 90% of it, as the Go runtime itself reports.
func TestSoftMemoryLimitFollowsTheContainerLimit(t *testing.T) {
	limit, err := harness.RenderedMemoryLimit()
	if err != nil {
		t.Fatal(err)
	}
	got, err := env.Steward.Counter("go_gc_gomemlimit_bytes", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := float64(int64(float64(limit) * 0.9)); got != want {
		t.Errorf("go_gc_gomemlimit_bytes = %.0f, want %.0f: 90%% of the rendered container limit of %d bytes", got, want, limit)
	}
}
