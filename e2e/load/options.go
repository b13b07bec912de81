package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// options are the load tool's flags. The defaults keep a full run,
// seeding included, to about an hour on a two-core machine. Seven rounds
// per point keep the paired-round median, on which the throughput targets
// are judged, where the undisturbed rounds put it even when three rounds
// are disturbed. The caches are seeded at the scale (10k XRs, 50k
// MRs, 5k Flux objects; about four minutes there), so the memory target is
// measured rather than extrapolated; with smaller caches the report
// extrapolates from the bytes each cached object costs, which overstates
// the peak, as it adds that cost to a peak that includes the workloads'
// transient.
type options struct {
	duration      time.Duration
	rounds        int
	warmup        time.Duration
	concurrency   []int
	burstWriters  int
	burstDuration time.Duration
	xrs           int
	mrs           int
	flux          int
	workloads     map[string]bool
	profile       bool
	out           string
	chart         string
	jsonOut       string
	renderOnly    string
	workDir       string
	handlerBench  string
	// hostile runs only the hostile-load scenario (runHostile).
	hostile         bool
	hostileDuration time.Duration
	hostileOut      string
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 2*time.Second, "measured time per point (workload, configuration, writers)")
	fs.IntVar(&o.rounds, "rounds", 7, "rounds of each point, each measuring every configuration in turn; a point's figures sum its rounds")
	fs.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "unmeasured time before each point")
	conc := fs.String("concurrency", "1,16,64", "comma-separated numbers of closed-loop writers")
	fs.IntVar(&o.burstWriters, "burst-writers", 500, "writers in the burst")
	fs.DurationVar(&o.burstDuration, "burst-duration", 5*time.Second, "measured time of the burst, per configuration")
	fs.IntVar(&o.xrs, "xrs", fullXRs, "composite resources (XRs) present during the Crossplane workloads")
	fs.IntVar(&o.mrs, "mrs", fullMRs, "managed resources (MRs) present during the Crossplane workloads")
	fs.IntVar(&o.flux, "flux-objects", fullFlux, "Flux objects present during the Flux workloads")
	wl := fs.String("workloads", "", "comma-separated workloads to run (all when empty), plus \"burst\"")
	fs.BoolVar(&o.profile, "profile", true, "take CPU and heap profiles of Steward during judged workloads")
	fs.StringVar(&o.out, "out", "docs/benchmarks.md", "report to write (relative to the repository root)")
	fs.StringVar(&o.chart, "chart", "docs/benchmark-latency.svg", "latency chart to write (relative to the repository root)")
	fs.StringVar(&o.jsonOut, "json", "bin/benchmarks.json", "raw results to write (relative to the repository root); empty for none")
	fs.StringVar(&o.renderOnly, "render", "", "only render the report and chart from this raw results file")
	fs.StringVar(&o.workDir, "work-dir", "bin/bench", "directory for profiles and the allow-all webhook's files (relative to the repository root)")
	fs.StringVar(&o.handlerBench, "handler-bench", "", "output of `go test -bench` over ./webhooks/... to include in the report")
	fs.BoolVar(&o.hostile, "hostile", false, "run only the hostile-load scenario: floods of unauthenticated 7 MiB reviews at 20, 50 and 100 clients, Steward bounded and unbounded, -rounds rounds")
	fs.DurationVar(&o.hostileDuration, "hostile-duration", 10*time.Second, "how long each hostile flood lasts")
	fs.StringVar(&o.hostileOut, "hostile-out", "bin/hostile-load.md", "Markdown table of the hostile-load scenario (relative to the repository root); empty for none")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	for _, s := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return o, fmt.Errorf("-concurrency: %q is not a positive number", s)
		}
		o.concurrency = append(o.concurrency, n)
	}
	if *wl != "" {
		o.workloads = map[string]bool{}
		known := map[string]bool{"burst": true}
		for _, w := range workloads() {
			known[w.Name] = true
		}
		for _, s := range strings.Split(*wl, ",") {
			s = strings.TrimSpace(s)
			if !known[s] {
				return o, fmt.Errorf("-workloads: unknown workload %q", s)
			}
			o.workloads[s] = true
		}
	}
	switch {
	case o.duration <= 0:
		return o, fmt.Errorf("-duration must be positive")
	case o.rounds < 1:
		return o, fmt.Errorf("-rounds must be at least 1")
	case o.warmup < 0:
		return o, fmt.Errorf("-warmup must not be negative")
	case o.burstWriters < 1 || o.burstDuration <= 0:
		return o, fmt.Errorf("-burst-writers and -burst-duration must be positive")
	case o.xrs < 0 || o.mrs < 0 || o.flux < 0:
		return o, fmt.Errorf("-xrs, -mrs and -flux-objects must not be negative")
	case o.mrs > 0 && o.xrs == 0:
		return o, fmt.Errorf("-mrs needs -xrs > 0: every MR is composed by an XR")
	}
	return o, nil
}

// runs says whether a workload was selected.
func (o options) runs(name string) bool { return o.workloads == nil || o.workloads[name] }
