package main

import (
	"math"
	"slices"
	"time"
)

// results is everything a run measured; it is written as JSON so the
// report can be rendered again without measuring (-render).
type results struct {
	Machine   machine   `json:"machine"`
	Options   runParams `json:"options"`
	Points    []*point  `json:"points"`
	Memory    memReport `json:"memory"`
	Seeded    *seeded   `json:"seeded,omitempty"`
	Profiles  []profile `json:"profiles,omitempty"`
	Workloads []wlInfo  `json:"workloads"`
	// Webhooks lists the entries of Steward's configurations measured.
	Webhooks []string  `json:"webhooks"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// OtherCPU is the CPU time processes other than the benchmark's used
	// during the measured points, and MeasuredTime their total length.
	OtherCPU     time.Duration `json:"otherCPU"`
	MeasuredTime time.Duration `json:"measuredTime"`
	Warnings     []string      `json:"warnings,omitempty"`
	// MatchCosts are the API server's match-condition exclusions over the
	// run, per webhook.
	MatchCosts []matchCost `json:"matchCosts,omitempty"`
	// Alone are the webhook processes driven directly (alone.go).
	Alone []*alonePoint `json:"alone,omitempty"`
	// HandlerBench is the handler benchmarks' output (go test -bench).
	HandlerBench string `json:"handlerBench,omitempty"`
}

// runParams are the options that shape the numbers.
type runParams struct {
	Duration      time.Duration `json:"duration"`
	Rounds        int           `json:"rounds"`
	Warmup        time.Duration `json:"warmup"`
	Concurrency   []int         `json:"concurrency"`
	BurstWriters  int           `json:"burstWriters"`
	BurstDuration time.Duration `json:"burstDuration"`
	XRs           int           `json:"xrs"`
	MRs           int           `json:"mrs"`
	Flux          int           `json:"flux"`
}

// wlInfo describes a workload in the results.
type wlInfo struct {
	Name   string            `json:"name"`
	Title  string            `json:"title"`
	Short  string            `json:"short"`
	Phase  int               `json:"phase"`
	Verb   string            `json:"verb"`
	User   string            `json:"user"`
	Denies map[configID]bool `json:"denies,omitempty"`
}

// point is one measurement: a workload under one configuration with a
// number of writers.
type point struct {
	Workload string   `json:"workload"`
	Config   configID `json:"config"`
	Writers  int      `json:"writers"`
	Burst    bool     `json:"burst,omitempty"`

	Elapsed     time.Duration `json:"elapsed"`
	Succeeded   int           `json:"succeeded"`
	Denied      int           `json:"denied"`
	Failed      int           `json:"failed"`
	Errors      []string      `json:"errors,omitempty"`
	P50         time.Duration `json:"p50"`
	P90         time.Duration `json:"p90"`
	P99         time.Duration `json:"p99"`
	Max         time.Duration `json:"max"`
	WarningsPer float64       `json:"warningsPerWrite"`

	// CPU time each process used during the measurement.
	CPU map[string]time.Duration `json:"cpu"`
	// MachineBusy is the CPU time of the whole machine.
	MachineBusy time.Duration `json:"machineBusy"`
	// Calls are the webhook requests Steward and the allow-all webhook
	// served during the measurement.
	StewardCalls  float64 `json:"stewardCalls"`
	AllowAllCalls float64 `json:"allowAllCalls"`
	// The webhook handler's latency (controller-runtime's histogram: the
	// HTTP exchange, from the request's headers to the answer), Steward's
	// in (d) and the allow-all webhook's in (c), in seconds.
	HandlerP50 float64 `json:"handlerP50"`
	HandlerP99 float64 `json:"handlerP99"`
	// Steward's decision latency (steward_decision_duration_seconds: the
	// rule alone, from the decoded request to its answer), in seconds.
	DecisionP50 float64 `json:"decisionP50,omitempty"`
	DecisionP99 float64 `json:"decisionP99,omitempty"`
	// MetricsMissing is set when a webhook process's metrics could not be
	// read around the point; its calls and handler latency are unknown.
	MetricsMissing bool `json:"metricsMissing,omitempty"`
	// StewardRSS is Steward's resident memory after the point.
	StewardRSS int64 `json:"stewardRSS"`
	// RoundRates are the writes per second of each round the point sums.
	RoundRates []float64 `json:"roundRates,omitempty"`

	// latencies (sorted), handler and decision are kept to merge rounds.
	latencies []time.Duration
	handler   histogram
	decision  histogram
}

// Process names in point.CPU.
const (
	procAPIServer = "kube-apiserver"
	procEtcd      = "etcd"
	procSteward   = "steward"
	procAllowAll  = "allow-all"
	procLoad      = "load"
)

// merge sums the rounds of one point, measured at different moments of
// the run: counts, times and CPU add up, latencies are pooled, so each
// figure of the result is that of one long point whose parts were
// measured in alternation with the other configurations.
func merge(rounds []*point) *point {
	first := rounds[0]
	p := point{Workload: first.Workload, Config: first.Config, Writers: first.Writers, Burst: first.Burst, CPU: map[string]time.Duration{}}
	var warnings float64
	for _, r := range rounds {
		p.Elapsed += r.Elapsed
		p.Succeeded += r.Succeeded
		p.Denied += r.Denied
		p.Failed += r.Failed
		p.MachineBusy += r.MachineBusy
		p.StewardCalls += r.StewardCalls
		p.AllowAllCalls += r.AllowAllCalls
		p.MetricsMissing = p.MetricsMissing || r.MetricsMissing
		p.StewardRSS = max(p.StewardRSS, r.StewardRSS)
		warnings += r.WarningsPer * float64(r.Answered()+r.Failed)
		for name, d := range r.CPU {
			p.CPU[name] += d
		}
		p.Errors = append(p.Errors, r.Errors...)
		p.latencies = append(p.latencies, r.latencies...)
		p.handler = p.handler.add(r.handler)
		p.decision = p.decision.add(r.decision)
		p.RoundRates = append(p.RoundRates, r.Rate())
	}
	if n := p.Answered() + p.Failed; n > 0 {
		p.WarningsPer = warnings / float64(n)
	}
	slices.Sort(p.latencies)
	p.setLatencies()
	return &p
}

// setLatencies derives the client, handler and decision percentiles.
func (p *point) setLatencies() {
	p.P50, p.P90, p.P99, p.Max = percentile(p.latencies, 0.50), percentile(p.latencies, 0.90), percentile(p.latencies, 0.99), percentile(p.latencies, 1)
	p.HandlerP50, p.HandlerP99 = p.handler.p50p99()
	p.DecisionP50, p.DecisionP99 = p.decision.p50p99()
}

// Answered is the number of writes answered as the configuration intends.
func (p *point) Answered() int { return p.Succeeded + p.Denied }

// Rate is answered writes per second.
func (p *point) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Answered()) / p.Elapsed.Seconds()
}

// CPUPerWrite is a process's CPU time per answered write, in ms.
func (p *point) CPUPerWrite(proc string) float64 {
	if p.Answered() == 0 {
		return math.NaN()
	}
	return float64(p.CPU[proc]) / float64(time.Millisecond) / float64(p.Answered())
}

// CPUPerCall is a webhook process's CPU time per call it served, in ms.
func (p *point) CPUPerCall(proc string) float64 {
	calls := p.StewardCalls
	if proc == procAllowAll {
		calls = p.AllowAllCalls
	}
	if calls < 1 {
		return math.NaN()
	}
	return float64(p.CPU[proc]) / float64(time.Millisecond) / calls
}

// CallsPerWrite is how many webhook calls the configuration's webhook
// process served per write.
func (p *point) CallsPerWrite() float64 {
	if p.Answered() == 0 {
		return math.NaN()
	}
	switch p.Config {
	case cfgSteward:
		return p.StewardCalls / float64(p.Answered())
	case cfgAllowAll:
		return p.AllowAllCalls / float64(p.Answered())
	}
	return 0
}

// ServerCPUPerWrite is the CPU time per answered write (ms) of what serves
// it in this configuration: the API server, etcd, and the webhook process
// the configuration registers (Steward in (d), the allow-all webhook in
// (c)). Unlike throughput, it barely depends on what else the machine
// runs, and when the server side is CPU-bound its inverse is the capacity.
func (p *point) ServerCPUPerWrite() float64 {
	if p.Answered() == 0 {
		return math.NaN()
	}
	cpu := p.CPU[procAPIServer] + p.CPU[procEtcd]
	switch p.Config {
	case cfgSteward:
		cpu += p.CPU[procSteward]
	case cfgAllowAll:
		cpu += p.CPU[procAllowAll]
	}
	return float64(cpu) / float64(time.Millisecond) / float64(p.Answered())
}

// OtherCores is how many cores processes outside the benchmark kept busy
// on average during the point.
func (p *point) OtherCores() float64 {
	var ours time.Duration
	for _, d := range p.CPU {
		ours += d
	}
	other := p.MachineBusy - ours
	if other < 0 || p.Elapsed <= 0 {
		return 0
	}
	return other.Seconds() / p.Elapsed.Seconds()
}

// memReport is Steward's memory at the moments that matter.
type memReport struct {
	// IdleRSS and IdleHeap: freshly started and synced, before any load
	// and before the large caches exist.
	IdleRSS  int64 `json:"idleRSS"`
	IdleHeap int64 `json:"idleHeap"`
	// PeakBeforeBurst is VmHWM after the phase-1 workloads, before the
	// burst; PeakSmall is VmHWM after the burst too.
	PeakBeforeBurst int64 `json:"peakBeforeBurst"`
	PeakSmall       int64 `json:"peakSmall"`
	// CachedRSS and CachedHeap: restarted and synced with the large caches.
	CachedRSS  int64 `json:"cachedRSS"`
	CachedHeap int64 `json:"cachedHeap"`
	// PeakLarge is VmHWM after the phase-2 workloads.
	PeakLarge int64 `json:"peakLarge"`
	// CachedObjects is what Steward reports caching (claimguard's gauge),
	// or the seeded count when it reports nothing.
	CachedObjects  float64 `json:"cachedObjects"`
	ClaimguardSeen bool    `json:"claimguardSeen"`
	// MostCachedObjects is the most claimguard reported caching at the end
	// of a phase-2 workload, before its cleanup: the seeded objects plus
	// the MRs the workload created.
	MostCachedObjects float64 `json:"mostCachedObjects,omitempty"`
	// SoftLimit is the Go runtime's soft memory limit in Steward
	// (go_gc_gomemlimit_bytes), which the harness derives from the rendered
	// Deployment's memory limit as the Deployment does.
	SoftLimit int64 `json:"softLimit"`
}

// profile is a Steward profile taken during a point.
type profile struct {
	Workload string `json:"workload"`
	Kind     string `json:"kind"`
	Path     string `json:"path"`
	Top      string `json:"top"`
}
