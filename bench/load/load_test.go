package main

import (
	"math"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

func TestNativeHistogramQuantileReadsAbsoluteBucketIndexes(t *testing.T) {
	// Schema 3: bucket i covers (2^((i-1)/8), 2^(i/8)]. Two spans: buckets
	// -80 and -79 (about 1 ms), then after a gap of 10 buckets, -68.
	h := &dto.Histogram{
		SampleCount:   proto.Uint64(100),
		Schema:        proto.Int32(3),
		PositiveSpan:  []*dto.BucketSpan{{Offset: proto.Int32(-80), Length: proto.Uint32(2)}, {Offset: proto.Int32(10), Length: proto.Uint32(1)}},
		PositiveDelta: []int64{50, -1, -48}, // counts 50, 49, 1
	}
	got := nativeHistogram(map[string]*dto.MetricFamily{decisionMetric: {Metric: []*dto.Metric{{Histogram: h}}}}, decisionMetric)
	for q, bucket := range map[float64]float64{0.5: -80, 0.99: -79, 1: -68} {
		if v := got.quantile(q); math.Abs(v-math.Pow(2, bucket/8)) > 1e-12 {
			t.Errorf("quantile(%g) = %g, want the upper bound of bucket %g", q, v, bucket)
		}
	}
	if d := got.plus(got, -1); !math.IsNaN(d.quantile(0.5)) {
		t.Errorf("a reading minus itself should be empty, got %+v", d)
	}
}

func TestMergeSumsRoundsAndKeepsEachRoundsRate(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	a := &point{Workload: "w", Config: cfgSteward, Writers: 16, Elapsed: 2 * time.Second, Succeeded: 10, Denied: 10, Calls: 20,
		CPU: map[string]time.Duration{procSteward: ms(10)}, latencies: []time.Duration{ms(1), ms(2)},
		decision: histogram{buckets: map[int32]int64{-10: 98}}}
	b := &point{Workload: "w", Config: cfgSteward, Writers: 16, Elapsed: 2 * time.Second, Denied: 60, Failed: 1, Calls: 60,
		CPU: map[string]time.Duration{procSteward: ms(30)}, latencies: []time.Duration{ms(3), ms(4)},
		decision: histogram{buckets: map[int32]int64{-8: 2}}}
	got := merge([]*point{a, b})
	switch {
	case got.Workload != "w" || got.Config != cfgSteward || got.Writers != 16:
		t.Errorf("identity not kept: %+v", got)
	case got.Elapsed != 4*time.Second || got.Answered() != 80 || got.Failed != 1 || got.Calls != 80:
		t.Errorf("counts not summed: elapsed %s, answered %d, failed %d, calls %.0f", got.Elapsed, got.Answered(), got.Failed, got.Calls)
	case got.CPUPerCall() != 0.5:
		t.Errorf("CPU per call %.3f ms, want 0.5", got.CPUPerCall())
	case got.P50 != ms(2) || len(got.RoundRates) != 2 || got.RoundRates[1] != 30:
		t.Errorf("latencies not pooled or round rates wrong: p50 %s rounds %v", got.P50, got.RoundRates)
	case got.DecisionP99 != math.Pow(2, -8):
		// 98 decisions up to 2^-10 s and 2 up to 2^-8 s: the 99th of
		// 100 lies in the second round's bucket.
		t.Errorf("decision histograms not summed: p99 %g", got.DecisionP99)
	}
	if a.Calls != 20 || len(a.RoundRates) != 0 {
		t.Errorf("merge changed its first round: %+v", a)
	}
}

// TestGoalsJudgePairedRounds proves the throughput goals compare
// configurations round by round: the machine ran at half speed during the
// second round, which drags Steward's summed rate below (a)'s more than
// its own cost does, while every round's pair says it keeps 0.95× of (a).
func TestGoalsJudgePairedRounds(t *testing.T) {
	pt := func(cfg configID, rates ...float64) *point {
		p := &point{Workload: "fleet-configmap-create-agent", Config: cfg, Writers: 16, RoundRates: rates, Elapsed: 6 * time.Second}
		for _, r := range rates {
			p.Succeeded += int(r * 2)
		}
		return p
	}
	r := &results{Options: options{concurrency: []int{16}}, Points: []*point{
		pt(cfgNone, 1000, 500, 1000), pt(cfgPolicy, 800, 400, 800), pt(cfgSteward, 950, 200, 950),
	}}
	if got := r.paired("fleet-configmap-create-agent", cfgSteward, cfgNone, 16).String(); got != "0.95× (0.40–0.95)" {
		t.Fatalf("paired ratio %q, want the median 0.95 and the range 0.40–0.95", got)
	}
	for _, g := range evaluateGoals(r) {
		if strings.HasPrefix(g.Goal, "Fleet agent creates") {
			if g.Verdict != "**met** (rounds on both sides)" {
				t.Errorf("verdict %q on %q, want met on the median, noting the round below the goal", g.Verdict, g.Measured)
			}
			return
		}
	}
	t.Error("no agent-creates goal evaluated")
}

func TestReportOpensWithTheSummaryAndLabelsItsScale(t *testing.T) {
	res := &results{Options: options{rounds: 2, duration: time.Second, concurrency: []int{1, 16}}, Memory: memReport{SoftLimit: 241591910}}
	md := renderMarkdown(res, "chart.svg")
	order := []string{"## Admission under load", "## Summary", "## Reproducing", "## Methodology", "## Appendix", "### Raw runs", "Soft memory limit, from the Deployment's memory limit: 230.4 MiB"}
	at := 0
	for _, s := range order {
		i := strings.Index(md[at:], s)
		if i < 0 {
			t.Fatalf("%q missing or out of order in:\n%s", s, md)
		}
		at += i
	}
	if !strings.Contains(md, "**reduced scale**") {
		t.Errorf("a two-round run is not labelled as reduced scale:\n%s", md)
	}
}
