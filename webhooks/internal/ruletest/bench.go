package ruletest

import (
	"context"
	"runtime"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// AllowAll is the floor a rule's handler is measured against: it allows
// every request without reading it.
type AllowAll struct{}

// Handle allows req.
func (AllowAll) Handle(context.Context, *rule.Request) admission.Response {
	return admission.Allowed("")
}

// Spec names the baseline; it is never registered.
func (AllowAll) Spec() rule.Spec { return rule.Spec{Name: "allowall"} }

// Both measure a rule as the server calls it: through one Request reused
// from call to call (Reset, then Handle), its objects' Views included.

// BenchmarkHandle measures h on each of reqs, one sub-benchmark each, and
// AllowAll on reqs[floor] as the sub-benchmark "AllowAll", so the handler's
// own cost can be read off against the admission plumbing's.
func BenchmarkHandle(b *testing.B, h rule.Rule, floor string, reqs map[string]admission.Request) {
	b.Helper()
	req, ok := reqs[floor]
	if !ok {
		b.Fatalf("no request %q to measure AllowAll on", floor)
	}
	run := func(name string, h rule.Rule, req admission.Request) {
		b.Run(name, func(b *testing.B) {
			measure(b, h, req)
		})
	}
	run("AllowAll", AllowAll{}, req)
	for name, req := range reqs {
		run(name, h, req)
	}
}

// BenchmarkVerdict checks that h answers req as check expects, then
// measures h on req, so a benchmark never times an answer it did not mean
// to (a fixture that stopped matching the rule would measure its cheapest
// path).
func BenchmarkVerdict(b *testing.B, h rule.Rule, req admission.Request, check func(admission.Response) error) {
	b.Helper()
	ctx := context.Background()
	if err := check(Judge(ctx, h, req)); err != nil {
		b.Fatal(err)
	}
	measure(b, h, req)
}

// measure times h on req, and reports beside the wall time the process's
// CPU time per call (cpu-ns/op): what other processes on a shared machine
// take of its cores lengthens the first, hardly the second, so rounds
// compared by it (make bench-compare) drift less.
func measure(b *testing.B, h rule.Rule, req admission.Request) {
	ctx := context.Background()
	rr := new(rule.Request)
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		rr.Reset(req)
		_ = h.Handle(ctx, rr)
	}
	if used := processCPU() - start; used > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// HeapKept is the heap that what fill returns keeps alive: the live heap
// after fill, less the live heap before, both read after a collection, so
// the garbage fill made along the way does not count. A rule's cache
// benchmarks divide it by the objects fill cached.
func HeapKept(fill func() any) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := fill()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}
