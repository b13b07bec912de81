package main

import (
	"context"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// op performs one write; seq counts the worker's writes from 0.
type op func(ctx context.Context, seq int) error

// outcome is how the API server answered one write.
type outcome int

const (
	succeeded outcome = iota
	// denied is a refusal by admission (403 from a webhook or policy).
	denied
	// failed is anything else: timeouts, webhook call failures, 5xx,
	// conflicts.
	failed
)

func classify(err error) outcome {
	switch {
	case err == nil:
		return succeeded
	case (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) &&
		(strings.Contains(err.Error(), "denied the request") || strings.Contains(err.Error(), "ValidatingAdmissionPolicy")):
		// A webhook's denial is a 403; a policy's is a 403 or 422,
		// depending on the validation's reason.
		return denied
	}
	return failed
}

// load is what a closed loop of writers achieved.
type load struct {
	Writers   int
	Elapsed   time.Duration
	Succeeded int
	Denied    int
	Failed    int
	// FirstErrors are a few distinct error messages, for the report.
	FirstErrors []string
	// Latencies of every answered write (succeeded or denied), sorted.
	latencies []time.Duration
}

// Answered is the number of writes the API server answered as intended.
func (l load) Answered() int { return l.Succeeded + l.Denied }

// Rate is answered writes per second.
func (l load) Rate() float64 {
	if l.Elapsed <= 0 {
		return 0
	}
	return float64(l.Answered()) / l.Elapsed.Seconds()
}

// Percentile returns the q-quantile of the answered writes' latencies.
func (l load) Percentile(q float64) time.Duration {
	return percentile(l.latencies, q)
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

// runLoad runs ops (one per writer) in closed loops: each writer sends its
// next write as soon as the previous one is answered. After warmup,
// onStart reads the processes' counters and the measurement window opens;
// after duration, onEnd reads them again and the window closes, while the
// writers are still running, so the load is steady across the whole
// window. A write counts when it completes inside the window; since writes
// in flight at either edge are cut alike, counts of webhook calls read by
// onStart and onEnd match the writes counted. seqStart offsets every
// writer's sequence numbers so that repeated runs write fresh values and
// names.
func runLoad(ctx context.Context, ops []op, warmup, duration time.Duration, seqStart int, onStart, onEnd func()) load {
	type result struct {
		lat []time.Duration
		out [3]int
		err []string
	}
	results := make([]result, len(ops))
	var windowStart, windowEnd, stop atomic.Int64
	windowEnd.Store(math.MaxInt64)
	var wg sync.WaitGroup
	for i, o := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			r.lat = make([]time.Duration, 0, 4096)
			for seq := seqStart; stop.Load() == 0 && ctx.Err() == nil; seq++ {
				t0 := time.Now()
				err := o(ctx, seq)
				t1 := time.Now()
				if from := windowStart.Load(); from == 0 || t1.UnixNano() < from || t1.UnixNano() > windowEnd.Load() {
					continue
				}
				oc := classify(err)
				r.out[oc]++
				if oc == failed {
					if len(r.err) < 3 {
						r.err = append(r.err, err.Error())
					}
					continue
				}
				r.lat = append(r.lat, t1.Sub(t0))
			}
		}()
	}
	sleep(ctx, warmup)
	onStart()
	from := time.Now()
	windowStart.Store(from.UnixNano())
	sleep(ctx, duration)
	to := time.Now()
	windowEnd.Store(to.UnixNano())
	onEnd()
	stop.Store(1)
	wg.Wait()

	l := load{Writers: len(ops), Elapsed: to.Sub(from)}
	seen := map[string]bool{}
	for _, r := range results {
		l.Succeeded += r.out[succeeded]
		l.Denied += r.out[denied]
		l.Failed += r.out[failed]
		l.latencies = append(l.latencies, r.lat...)
		for _, e := range r.err {
			if !seen[e] && len(l.FirstErrors) < 5 {
				seen[e] = true
				l.FirstErrors = append(l.FirstErrors, e)
			}
		}
	}
	sort.Slice(l.latencies, func(a, b int) bool { return l.latencies[a] < l.latencies[b] })
	return l
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
