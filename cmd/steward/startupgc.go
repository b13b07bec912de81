package main

import (
	"context"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Steward's collector while it fills its caches. Go lets the heap grow to
// twice what was live after the last collection (GOGC=100). While the
// informers list, most of what Steward allocates is garbage at once (each
// object as the API server sent it, trimmed to a few fields on arrival,
// and the lists' own arrays), so the heap the collector allows for is
// twice a live heap that itself holds a list in flight: the start-up peak
// sat a third above the memory Steward kept once synced. Collecting at
// half that growth until /readyz first passes keeps the peak nearer the
// synced memory, for CPU spent only while starting (make bench-scale
// measures both; see docs/benchmarks.md). A quarter (GOGC=25) slowed the
// start-up at 500k objects past claimguard's one-minute readiness bound.

// startupGCPercent is GOGC until Steward is first ready.
const startupGCPercent = 50

// readinessRecorder is the manager, noting each readiness check added
// through it, so that Steward can tell when /readyz first passes.
type readinessRecorder struct {
	manager.Manager
	mu     sync.Mutex
	checks []healthz.Checker
}

func (r *readinessRecorder) AddReadyzCheck(name string, check healthz.Checker) error {
	r.mu.Lock()
	r.checks = append(r.checks, check)
	r.mu.Unlock()
	return r.Manager.AddReadyzCheck(name, check)
}

// ready reports whether every readiness check passes now.
func (r *readinessRecorder) ready(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/readyz", nil)
	if err != nil {
		return false
	}
	r.mu.Lock()
	checks := append([]healthz.Checker(nil), r.checks...)
	r.mu.Unlock()
	for _, check := range checks {
		if check(req) != nil {
			return false
		}
	}
	return true
}

// collectHarderUntilReady sets GOGC to startupGCPercent, and back once
// ready reports true (asked every poll) or ctx ends. It does nothing when
// GOGC is set: the operator chose the collector's pace.
func collectHarderUntilReady(ctx context.Context, gogc string, ready func(context.Context) bool, poll time.Duration, log logr.Logger) {
	if gogc != "" {
		return
	}
	before := debug.SetGCPercent(startupGCPercent)
	start := time.Now()
	go func() {
		defer debug.SetGCPercent(before)
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if ready(ctx) {
					log.V(1).Info("ready: the collector is back at its usual pace", "startupGCPercent", startupGCPercent, "GOGC", before, "after", time.Since(start).Round(time.Millisecond).String())
					return
				}
			}
		}
	}()
}
