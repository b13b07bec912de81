package main

import (
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/stewardhq/steward/bench"
	"github.com/stewardhq/steward/e2e/harness"
)

// configID names one admission configuration under test.
type configID string

// The configurations: (a) no admission, (b) the CEL policy, (c) the
// allow-all webhook, (d) Steward.
const cfgNone, cfgPolicy, cfgAllowAll, cfgSteward configID = "a", "b", "c", "d"

// allConfigs is the order of the first round; later rounds alternate the
// direction (a b c d, d c b a, ...) so drift favours no configuration.
var allConfigs = []configID{cfgNone, cfgPolicy, cfgAllowAll, cfgSteward}

var configNames = map[configID]string{cfgNone: "no admission", cfgPolicy: "CEL policy", cfgAllowAll: "allow-all webhook", cfgSteward: "Steward"}

// Process names in point.CPU.
const procAPIServer, procEtcd, procSteward, procAllowAll, procLoad = "kube-apiserver", "etcd", "steward", "allow-all", "load"

// webhookProc is the webhook process a configuration registers.
var webhookProc = map[configID]string{cfgAllowAll: procAllowAll, cfgSteward: procSteward}

// point is one measurement: a workload under one configuration with a
// number of writers, summed over its rounds.
type point struct {
	Workload string
	Config   configID
	Writers  int
	Burst    bool

	Elapsed                   time.Duration
	Succeeded, Denied, Failed int
	Errors                    []string
	P50, P90, P99             time.Duration
	// CPU is the CPU time each process used; MachineBusy the machine's.
	CPU         map[string]time.Duration
	MachineBusy time.Duration
	// Calls are the requests the configuration's webhook process served.
	Calls float64
	// DecisionP99 is Steward's decision latency (the rule alone), in s.
	DecisionP99 float64
	// RoundRates are the writes per second of each round.
	RoundRates []float64

	latencies []time.Duration
	decision  histogram
}

// Answered is the number of writes answered as the configuration intends;
// Rate those per second.
func (p *point) Answered() int { return p.Succeeded + p.Denied }
func (p *point) Rate() float64 { return float64(p.Answered()) / max(p.Elapsed.Seconds(), 1e-9) }

// CPUPerCall is the webhook process's CPU time per call it served, in ms
// (NaN without calls).
func (p *point) CPUPerCall() float64 {
	if p.Calls < 1 {
		return math.NaN()
	}
	return float64(p.CPU[webhookProc[p.Config]]) / float64(time.Millisecond) / p.Calls
}

// ServerCPUPerWrite is the CPU time per answered write (ms) of what serves
// it: the API server, etcd and the configuration's webhook process. Unlike
// throughput it barely moves with the machine's other load, and when the
// server side is CPU-bound its inverse is the capacity.
func (p *point) ServerCPUPerWrite() float64 {
	return float64(p.CPU[procAPIServer]+p.CPU[procEtcd]+p.CPU[webhookProc[p.Config]]) / float64(time.Millisecond) / float64(p.Answered())
}

// OtherCores is how many cores processes outside the benchmark kept busy.
func (p *point) OtherCores() float64 {
	other := p.MachineBusy
	for _, d := range p.CPU {
		other -= d
	}
	return max(other.Seconds(), 0) / max(p.Elapsed.Seconds(), 1e-9)
}

// merge sums the rounds of one point: counts, times and CPU add up and
// latencies are pooled; each round's rate is kept for the paired ratios.
func merge(rounds []*point) *point {
	p := *rounds[0]
	p.Elapsed, p.Succeeded, p.Denied, p.Failed, p.MachineBusy, p.Calls = 0, 0, 0, 0, 0, 0
	p.CPU, p.Errors, p.latencies, p.decision, p.RoundRates = map[string]time.Duration{}, nil, nil, histogram{}, nil
	for _, r := range rounds {
		p.Elapsed += r.Elapsed
		p.Succeeded += r.Succeeded
		p.Denied += r.Denied
		p.Failed += r.Failed
		p.MachineBusy += r.MachineBusy
		p.Calls += r.Calls
		for name, d := range r.CPU {
			p.CPU[name] += d
		}
		p.Errors = append(p.Errors, r.Errors...)
		p.latencies = append(p.latencies, r.latencies...)
		p.decision = p.decision.plus(r.decision, 1)
		p.RoundRates = append(p.RoundRates, r.Rate())
	}
	slices.Sort(p.latencies)
	p.P50, p.P90, p.P99 = percentile(p.latencies, 0.50), percentile(p.latencies, 0.90), percentile(p.latencies, 0.99)
	if q := p.decision.quantile(0.99); !math.IsNaN(q) {
		p.DecisionP99 = q
	}
	return &p
}

// reading is the state of the processes' counters at one moment.
type reading struct {
	cpu               map[string]time.Duration
	machineBusy       time.Duration
	steward, allowAll map[string]*dto.MetricFamily
}

const requestsMetric = "controller_runtime_webhook_requests_total"

// read takes a reading of every process.
func (b *loadRun) read() reading {
	r := reading{cpu: map[string]time.Duration{}}
	pids := map[string]int{procAPIServer: b.c.apiPID, procEtcd: b.c.etcdPID, procSteward: b.c.env.Steward.PID(), procAllowAll: b.c.aa.cmd.Process.Pid, procLoad: os.Getpid()}
	for name, pid := range pids {
		if d, err := harness.ProcessCPU(pid); err == nil {
			r.cpu[name] = d
		}
	}
	r.machineBusy, _ = harness.MachineBusy()
	var err error
	if r.steward, err = bench.Scrape(b.c.env.Steward.MetricsRequest(bench.ProtoFormat())); err != nil {
		b.res.Warnf("reading steward's metrics: %v", err)
	}
	if r.allowAll, err = bench.Scrape(http.Get(b.c.aa.local("/metrics"))); err != nil {
		b.res.Warnf("reading the allow-all webhook's metrics: %v", err)
	}
	return r
}

// fill sets a point's process figures from the readings around it.
func (p *point) fill(before, after reading) {
	p.CPU = map[string]time.Duration{}
	for name, d := range after.cpu {
		p.CPU[name] = d - before.cpu[name]
	}
	p.MachineBusy = after.machineBusy - before.machineBusy
	switch p.Config {
	case cfgSteward:
		p.Calls = harness.SumFamilies(after.steward, requestsMetric, nil) - harness.SumFamilies(before.steward, requestsMetric, nil)
		p.decision = nativeHistogram(after.steward, decisionMetric).plus(nativeHistogram(before.steward, decisionMetric), -1)
	case cfgAllowAll:
		p.Calls = harness.SumFamilies(after.allowAll, requestsMetric, nil) - harness.SumFamilies(before.allowAll, requestsMetric, nil)
	}
}

const decisionMetric = "steward_decision_duration_seconds"

// histogram is a native histogram's buckets by absolute index (the zero
// bucket at math.MinInt32), summed over every series of a metric.
type histogram struct {
	schema  int32
	buckets map[int32]int64
}

func nativeHistogram(families map[string]*dto.MetricFamily, name string) histogram {
	h := histogram{buckets: map[int32]int64{}}
	for _, m := range families[name].GetMetric() {
		mh := m.GetHistogram()
		h.schema, h.buckets[math.MinInt32] = mh.GetSchema(), h.buckets[math.MinInt32]+int64(mh.GetZeroCount())
		idx, d, count, deltas := int32(0), 0, int64(0), mh.GetPositiveDelta()
		for _, span := range mh.GetPositiveSpan() {
			idx += span.GetOffset()
			for j := uint32(0); j < span.GetLength() && d < len(deltas); j, d, idx = j+1, d+1, idx+1 {
				count += deltas[d]
				h.buckets[idx] += count
			}
		}
	}
	return h
}

// plus returns h plus sign times o: the observations of two intervals
// (sign 1), or those made between an earlier reading o and h (sign -1).
func (h histogram) plus(o histogram, sign int64) histogram {
	out := histogram{schema: max(h.schema, o.schema), buckets: maps.Clone(h.buckets)}
	if out.buckets == nil {
		out.buckets = map[int32]int64{}
	}
	for i, c := range o.buckets {
		out.buckets[i] += sign * c
	}
	return out
}

// quantile returns the upper bound of the bucket holding the q-quantile,
// so it never understates; NaN without observations.
func (h histogram) quantile(q float64) float64 {
	var count int64
	for _, c := range h.buckets {
		count += c
	}
	rank, seen := max(int64(math.Ceil(q*float64(count))), 1), int64(0)
	for _, i := range slices.Sorted(maps.Keys(h.buckets)) {
		if seen += h.buckets[i]; seen >= rank && i == math.MinInt32 {
			return 0
		} else if seen >= rank {
			return math.Pow(2, math.Pow(2, -float64(h.schema))*float64(i))
		}
	}
	return math.NaN()
}
