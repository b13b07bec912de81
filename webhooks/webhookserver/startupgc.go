package webhookserver

import (
	"context"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks/setup"
)

// Steward's collector while it fills its caches. Go lets the heap grow to
// twice what was live after the last collection (GOGC=100). While the
// informers list, most of what Steward allocates is garbage at once (each
// object as the API server sent it, trimmed to a few fields on arrival),
// so the heap the collector allows for is twice a live heap that itself
// holds a list in flight: the start-up peak sat a third above the memory
// Steward kept once synced. Collecting at half that growth until Steward
// is ready and no informer is listing keeps the peak nearer the synced
// memory, for CPU spent only while starting (make bench-scale measures
// both; see docs/benchmarks.md). Readiness alone is not enough: claimguard
// stops holding it back for a kind after a minute, while that kind's list
// may still be on its way. A quarter (GOGC=25) from the start slowed the
// start-up at 500k objects past that minute.
//
// Half is still a lot once the live heap is large: with 500k cached
// objects (a live heap of about 110 MiB while the last lists arrive) the
// heap grew 55 MiB between collections, and the peak was 1.3 times the
// synced memory. So the growth is also capped at startupHeadroom, by a
// lower GOGC as the live heap grows (startupPercent). A small cluster
// never reaches the cap (65k cached objects are about 17 MiB live); a
// large one pays in collections only while its largest lists arrive.

// startupGCPercent is GOGC until Steward has started, while the live heap
// is under twice startupHeadroom.
const startupGCPercent = 50

// startupHeadroom is the most the heap may grow past its live part while
// Steward starts; minStartupGCPercent bounds how often that makes the
// collector run.
const (
	startupHeadroom     = 24 << 20
	minStartupGCPercent = 20
)

// startupPercent is GOGC while starting with live bytes of live heap.
func startupPercent(live uint64) int {
	p := startupGCPercent
	if live > 0 {
		p = int(min(uint64(p), startupHeadroom*100/live))
	}
	return max(p, minStartupGCPercent)
}

// startupGCFor bounds how long Steward collects harder, so
// that an informer whose list never finishes cannot keep the collector
// at that pace for good.
const startupGCFor = 10 * time.Minute

// liveHeap is the heap the last collection found live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// started reports whether Steward is ready and its informers list nothing.
func started(ready func(context.Context) bool) func(context.Context) bool {
	return func(ctx context.Context) bool {
		return ready(ctx) && setup.ListsInFlight() == 0
	}
}

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

// collectHarderUntilStarted sets GOGC to startupGCPercent, lowers it as
// the live heap grows (startupPercent of live, asked every poll), and
// sets it back once started reports true (asked every poll too), after
// limit, or once ctx ends. It does nothing when GOGC is set: the operator
// chose the collector's pace.
func collectHarderUntilStarted(ctx context.Context, gogc string, started func(context.Context) bool, live func() uint64, poll, limit time.Duration, log logr.Logger) {
	if gogc != "" {
		return
	}
	pace := startupGCPercent
	before := debug.SetGCPercent(pace)
	lowest := pace
	start := time.Now()
	go func() {
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				debug.SetGCPercent(before)
				return
			case <-t.C:
				if started(ctx) || time.Since(start) >= limit {
					debug.SetGCPercent(before)
					// One collection at the usual pace now: until
					// the next, the runtime would keep a third more
					// memory from the system, sized by the pace the
					// last one ran at (in a test with a 100 MiB heap,
					// 196 MiB resident instead of 146).
					runtime.GC()
					log.Info("started: the collector is back at its usual pace", "startupGCPercent", startupGCPercent, "lowestGCPercent", lowest, "GOGC", before, "after", time.Since(start).Round(time.Millisecond).String())
					return
				}
				if p := startupPercent(live()); p != pace {
					debug.SetGCPercent(p)
					pace, lowest = p, min(lowest, p)
				}
			}
		}
	}()
}
