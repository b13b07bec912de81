package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestHostileLoadStaysWithinTheMemoryLimit floods Steward's webhook port
// with 100 concurrent unauthenticated reviews of 7 MiB, the most anyone who
// can reach the port can send, and proves that Steward stays within the
// memory limit its manifests set (it would be OOM-killed past it, failing
// every guarded write), refuses what it cannot hold with 429, and still
// answers the API server's ordinary calls within their timeout.
func TestHostileLoadStaysWithinTheMemoryLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	limit, err := harness.RenderedMemoryLimit()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(harness.MaxSizeReview(7*1024*1024 - 4096)); n > maxRequestBody || n < maxRequestBody-64*1024 {
		t.Fatalf("the flood's review is %d bytes; want just under the %d-byte limit", n, maxRequestBody)
	}
	res, err := env.RunHostileLoad(ctx, 100, 50, 5*time.Second, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("100 clients for 5 s: %d reviews sent, answers %v, %d without an answer; peak RSS %.1f MiB (limit %.0f MiB); ordinary writes %d answered, %d failed, slowest %s",
		res.Flood.Sent, res.Flood.Statuses, res.Flood.Errors, float64(res.Peak)/(1<<20), float64(limit)/(1<<20), res.Answered, res.Failed, res.Slowest)
	if res.Peak > limit {
		t.Errorf("Steward's resident memory peaked at %.1f MiB, over the %.0f MiB limit the manifests set", float64(res.Peak)/(1<<20), float64(limit)/(1<<20))
	}
	if res.Flood.Statuses[http.StatusTooManyRequests] == 0 {
		t.Errorf("no review was refused with 429 (answers %v): the flood was not bounded", res.Flood.Statuses)
	}
	if res.Answered == 0 || res.Failed > 0 {
		t.Errorf("ordinary writes during the flood: %d answered by Steward, %d failed (first: %s); want every one answered", res.Answered, res.Failed, res.FirstFailure)
	}
	if !env.Steward.Running() {
		t.Fatal("Steward died under the flood")
	}
}
