package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stewardhq/steward/bench"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// op performs one write; seq counts the writer's writes.
type op func(ctx context.Context, seq int) error

// Outcomes of a write: stored, refused by admission (a webhook's or a
// policy's denial), or anything else (timeouts, failed webhook calls, 5xx,
// conflicts).
const (
	succeeded = iota
	denied
	failed
)

func classify(err error) int {
	switch msg := fmt.Sprint(err); {
	case err == nil:
		return succeeded
	case (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) && (strings.Contains(msg, "denied the request") || strings.Contains(msg, "ValidatingAdmissionPolicy")):
		return denied
	}
	return failed
}

func perWriter(writers int, f func(w int) op) []op {
	ops := make([]op, writers)
	for w := range ops {
		ops[w] = f(w)
	}
	return ops
}

// runLoad runs ops (one per writer) in closed loops: each writer sends its
// next write as soon as the previous one is answered. After warmup,
// onStart reads the processes' counters and the measurement window opens;
// after duration, onEnd reads them again and the window closes while the
// writers still run, so the load is steady across the window. A write
// counts when it completes inside the window. seqStart offsets the
// sequence numbers so that repeated runs write fresh values and names.
func runLoad(ctx context.Context, ops []op, warmup, duration time.Duration, seqStart int, onStart, onEnd func()) *point {
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
		wg.Go(func() {
			r := &results[i]
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
		})
	}
	bench.Sleep(ctx, warmup)
	onStart()
	from := time.Now()
	windowStart.Store(from.UnixNano())
	bench.Sleep(ctx, duration)
	to := time.Now()
	windowEnd.Store(to.UnixNano())
	onEnd()
	stop.Store(1)
	wg.Wait()

	p := &point{Writers: len(ops), Elapsed: to.Sub(from)}
	for _, r := range results {
		p.Succeeded += r.out[succeeded]
		p.Denied += r.out[denied]
		p.Failed += r.out[failed]
		p.latencies = append(p.latencies, r.lat...)
		for _, e := range r.err {
			if !slices.Contains(p.Errors, e) && len(p.Errors) < 5 {
				p.Errors = append(p.Errors, e)
			}
		}
	}
	slices.Sort(p.latencies)
	return p
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(max(int(math.Ceil(q*float64(len(sorted))))-1, 0), len(sorted)-1)]
}
