package main

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/stewardhq/steward/e2e/harness"
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
	s := scrape{latencyMetric: &dto.MetricFamily{Metric: []*dto.Metric{{Histogram: h}}}}
	got := s.histogram(latencyMetric, nil)
	want := map[int32]uint64{-80: 50, -79: 49, -68: 1}
	for i, c := range want {
		if got.buckets[i] != c {
			t.Errorf("bucket %d = %d, want %d (all: %v)", i, got.buckets[i], c, got.buckets)
		}
	}
	if q := got.quantile(0.5); math.Abs(q-math.Pow(2, -80.0/8)) > 1e-12 {
		t.Errorf("p50 = %g, want the upper bound of bucket -80 (%g)", q, math.Pow(2, -80.0/8))
	}
	if q := got.quantile(0.99); math.Abs(q-math.Pow(2, -79.0/8)) > 1e-12 {
		t.Errorf("p99 = %g, want the upper bound of bucket -79", q)
	}
	if q := got.quantile(1); math.Abs(q-math.Pow(2, -68.0/8)) > 1e-12 {
		t.Errorf("max = %g, want the upper bound of bucket -68", q)
	}
	if d := got.sub(got); d.count != 0 || len(d.buckets) != 0 || !math.IsNaN(d.quantile(0.5)) {
		t.Errorf("a reading minus itself should be empty, got %+v", d)
	}
}

func TestCPUTimeOfThisProcessGrows(t *testing.T) {
	before, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the clock-tick-grained CPU time moves; on a busy machine
	// a fixed spin may get no tick at all, so only a long one is a failure.
	after := before
	for end := time.Now().Add(5 * time.Second); after <= before && time.Now().Before(end); {
		for spin := time.Now().Add(20 * time.Millisecond); time.Now().Before(spin); {
		}
		if after, err = cpuTime(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if after <= before {
		t.Errorf("CPU time did not grow while spinning: %s then %s", before, after)
	}
	if m, err := harness.ProcessMemory(os.Getpid()); err != nil || m.RSS <= 0 || m.Peak < m.RSS {
		t.Errorf("readMemory = %+v, %v; want RSS > 0 and peak >= RSS", m, err)
	}
}

func TestChartIsOneSVGDocumentWithEveryCategory(t *testing.T) {
	svg := svgChart([]barPanel{{
		Title: "t", YLabel: "ms", Categories: []string{"a & b", "c"},
		Series: []series{{Name: "x", Color: "#000", Values: []float64{1, math.NaN()}, Marks: []float64{2, math.NaN()}}},
	}})
	if !strings.HasPrefix(svg, "<svg ") || !strings.HasSuffix(svg, "</svg>\n") {
		t.Errorf("not one SVG document:\n%s", svg)
	}
	if !strings.Contains(svg, "a &amp; b") {
		t.Errorf("category labels are not escaped:\n%s", svg)
	}
}

func TestNiceStepRoundsUpToOneTwoOrFive(t *testing.T) {
	for raw, want := range map[float64]float64{0.7: 1, 1.3: 2, 3: 5, 7: 10, 23: 50, 0.012: 0.02} {
		if got := niceStep(raw); math.Abs(got-want) > 1e-9 {
			t.Errorf("niceStep(%g) = %g, want %g", raw, got, want)
		}
	}
}

func TestParseMatchCosts(t *testing.T) {
	body := `# HELP apiserver_admission_match_condition_evaluation_seconds x
# TYPE apiserver_admission_match_condition_evaluation_seconds histogram
apiserver_admission_match_condition_evaluation_seconds_bucket{kind="webhook",name="fleetguard.steward.dev",operation="UPDATE",type="validating",le="0.001"} 3
apiserver_admission_match_condition_evaluation_seconds_sum{kind="webhook",name="fleetguard.steward.dev",operation="UPDATE",type="validating"} 0.004
apiserver_admission_match_condition_evaluation_seconds_count{kind="webhook",name="fleetguard.steward.dev",operation="UPDATE",type="validating"} 100
apiserver_admission_match_condition_evaluation_seconds_sum{kind="webhook",name="fleetguard.steward.dev",operation="CREATE",type="validating"} 0.002
apiserver_admission_match_condition_evaluation_seconds_count{kind="webhook",name="fleetguard.steward.dev",operation="CREATE",type="validating"} 100
apiserver_admission_match_condition_evaluation_seconds_count{kind="webhook",name="other.example.com",operation="CREATE",type="validating"} 0
`
	families, err := harness.ParseMetrics(body)
	if err != nil {
		t.Fatal(err)
	}
	got := matchCosts(families)
	if len(got) != 2 || got[0].Webhook != "fleetguard.steward.dev" || got[0].Exclusion != 200 || math.Abs(got[0].MeanMicros()-30) > 1e-9 || got[1].MeanMicros() != 0 {
		t.Errorf("parsed %+v, want fleetguard with 200 exclusions at 30 µs and other with none", got)
	}
}

func TestMergeSumsRoundsAndPoolsLatencies(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	a := &point{Workload: "w", Config: cfgSteward, Writers: 16, Elapsed: 2 * time.Second, Succeeded: 10, Denied: 10, StewardCalls: 20,
		CPU: map[string]time.Duration{procSteward: ms(10)}, latencies: []time.Duration{ms(1), ms(2)}, StewardRSS: 5,
		decision: histogram{buckets: map[int32]uint64{-10: 98}, count: 98}}
	b := &point{Workload: "w", Config: cfgSteward, Writers: 16, Elapsed: 2 * time.Second, Denied: 60, Failed: 1, StewardCalls: 60,
		CPU: map[string]time.Duration{procSteward: ms(30)}, latencies: []time.Duration{ms(3), ms(4)}, StewardRSS: 7,
		decision: histogram{buckets: map[int32]uint64{-8: 2}, count: 2}}
	got := merge([]*point{a, b})
	switch {
	case got.Workload != "w" || got.Config != cfgSteward || got.Writers != 16:
		t.Errorf("identity not kept: %+v", got)
	case got.Elapsed != 4*time.Second || got.Answered() != 80 || got.Failed != 1 || got.StewardCalls != 80:
		t.Errorf("counts not summed: elapsed %s, answered %d, failed %d, calls %.0f", got.Elapsed, got.Answered(), got.Failed, got.StewardCalls)
	case got.CPUPerCall(procSteward) != 0.5 || got.StewardRSS != 7:
		t.Errorf("CPU per call %.3f ms (want 0.5), RSS %d (want the larger, 7)", got.CPUPerCall(procSteward), got.StewardRSS)
	case got.P50 != ms(2) || got.Max != ms(4) || len(got.RoundRates) != 2 || got.RoundRates[1] != 30:
		t.Errorf("latencies not pooled or round rates wrong: p50 %s max %s rounds %v", got.P50, got.Max, got.RoundRates)
	case got.DecisionP50 != math.Pow(2, -10) || got.DecisionP99 != math.Pow(2, -8):
		// 98 decisions in the bucket up to 2^-10 s, 2 in the one up to
		// 2^-8 s: the 99th of 100 lies in the second round's bucket.
		t.Errorf("decision histograms not summed: p50 %g, p99 %g", got.DecisionP50, got.DecisionP99)
	}
}

// TestAgentTargetJudgesPairedRounds proves the throughput targets compare
// configurations round by round: the machine ran at half speed during the
// second round, which drags (d)'s summed rate below (a)'s more than (d)'s
// own cost does, while every round's pair says (d) keeps 0.95× of (a).
func TestAgentTargetJudgesPairedRounds(t *testing.T) {
	pt := func(cfg configID, rates ...float64) *point {
		p := &point{Workload: "fleet-configmap-create-agent", Config: cfg, Writers: 16, RoundRates: rates, Elapsed: 6 * time.Second,
			CPU: map[string]time.Duration{procAPIServer: time.Second}}
		for _, r := range rates {
			p.Succeeded += int(r * 2)
		}
		return p
	}
	r := &results{Points: []*point{
		pt(cfgNone, 1000, 500, 1000),
		pt(cfgPolicy, 800, 400, 800),
		// (d)'s rounds: its second round fell in the slow period too,
		// but ran longer into it than (a)'s.
		pt(cfgSteward, 950, 200, 950),
	}}
	if m, text := r.pairedRatio("fleet-configmap-create-agent", cfgSteward, cfgNone, 16); m != 0.95 || !strings.Contains(text, "0.95× (0.40–0.95)") {
		t.Fatalf("paired ratio %v %q, want the median 0.95 and the range 0.40–0.95", m, text)
	}
	if summed := r.ratio("fleet-configmap-create-agent", cfgSteward, cfgNone, 16); summed >= agentCreateRatio {
		t.Fatalf("summed ratio %.2f; the test needs one below the target", summed)
	}
	for _, tr := range evaluateTargets(r) {
		if strings.HasPrefix(tr.Target, "Fleet agent creates") {
			if !strings.HasPrefix(tr.Verdict, "**met**") {
				t.Errorf("verdict %q on %q, want met on the paired rounds", tr.Verdict, tr.Measured)
			}
			return
		}
	}
	t.Error("no agent-creates target evaluated")
}

func TestMemoryReportNamesStewardsSoftLimit(t *testing.T) {
	res := &results{Memory: memReport{SoftLimit: 241591910}}
	if md := renderMarkdown(res, "chart.svg", ""); !strings.Contains(md, "soft memory limit its Deployment gives it: 230.4 MiB") {
		t.Errorf("a report of a run with a 230.4 MiB soft limit does not say so:\n%s", md)
	}
	res.Memory.SoftLimit = 0
	if md := renderMarkdown(res, "chart.svg", ""); strings.Contains(md, "soft memory limit") {
		t.Errorf("a report of a run without a soft limit claims one:\n%s", md)
	}
}

func TestMemoryReportCountsWhatTheWorkloadsAddedToTheCaches(t *testing.T) {
	res := &results{Seeded: &seeded{XRs: 10000, MRs: 50000, Flux: 5000}, Memory: memReport{
		CachedRSS: 100 << 20, PeakLarge: 140 << 20, ClaimguardSeen: true, CachedObjects: 60000, MostCachedObjects: 92000,
	}}
	if md := renderMarkdown(res, "chart.svg", ""); !strings.Contains(md, "up to 92000 objects in claimguard's caches, against 60000") {
		t.Errorf("the report does not say how many objects the peak covers:\n%s", md)
	}
	res.Memory.MostCachedObjects = 60000
	if md := renderMarkdown(res, "chart.svg", ""); strings.Contains(md, "up to") {
		t.Errorf("the report claims the workloads added objects when none were counted:\n%s", md)
	}
}
