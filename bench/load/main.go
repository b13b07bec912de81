// Command load measures what admission costs the API server: closed-loop
// writers drive realistic GitOps and control-plane traffic through a real
// kube-apiserver and etcd (the e2e harness) under four configurations,
// alternated round by round: (a) no admission webhooks, (b) a
// ValidatingAdmissionPolicy with fleetguard's core decision in CEL, (c) an
// allow-all controller-runtime webhook registered exactly as Steward's
// webhooks are and serving the same kind of certificate, and (d) Steward
// with every rule. It writes its section of docs/benchmarks.md and a
// latency chart; with -hostile it runs the hostile-load scenario instead.
// `make bench` and `make bench-hostile` run it; the cache-at-scale
// scenarios are bench/scale's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/stewardhq/steward/bench"
	"github.com/stewardhq/steward/e2e/harness"
)

// options are the load tool's flags. The defaults keep a full run, seeding
// included, to about an hour on two cores: seven rounds per point keep the
// median of paired rounds where the undisturbed rounds put it, and the
// caches are seeded at the goals' scale.
type options struct {
	duration, warmup, burstDuration, hostileDuration time.Duration
	rounds, burstWriters, objects, seedWorkers       int
	concurrency                                      []int
	workloads                                        map[string]bool
	profile, hostile                                 bool
	out, handlerBench, apiProfiles, webhooks         string
}

func parseOptions(args []string) (o options, err error) {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.DurationVar(&o.duration, "duration", 2*time.Second, "measured time of each round of a point (workload, configuration, writers)")
	fs.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "unmeasured time before each round")
	fs.IntVar(&o.rounds, "rounds", 7, "rounds of each point; each round measures every configuration in turn")
	conc := fs.String("concurrency", "1,16,64", "comma-separated numbers of closed-loop writers")
	fs.IntVar(&o.burstWriters, "burst-writers", 500, "writers in the burst")
	fs.DurationVar(&o.burstDuration, "burst-duration", 5*time.Second, "measured time of the burst, per configuration")
	fs.IntVar(&o.objects, "objects", bench.FullObjects, "objects (1 XR : 5 MRs : ½ Flux object) present during the Crossplane and Flux workloads")
	wl := fs.String("workloads", "", "comma-separated workloads to run (all when empty), plus \"burst\"")
	fs.BoolVar(&o.profile, "profile", true, "take CPU and heap profiles of Steward during judged workloads")
	fs.StringVar(&o.out, "out", "docs/benchmarks.md", "report to write the load run's section of, relative to the repository root; the chart is written beside it")
	fs.StringVar(&o.apiProfiles, "api-profiles", "", "a directory to save the API server's CPU profile of every measured round in (<workload>-<configuration>-<writers>w-<n>.pprof), to see what each configuration costs the API server itself")
	fs.StringVar(&o.handlerBench, "handler-bench", "", "output of `go test -bench` over ./webhooks/... to include in the report")
	fs.BoolVar(&o.hostile, "hostile", false, "run only the hostile-load scenario (floods of unauthenticated 7 MiB reviews at 20, 50 and 100 clients, Steward bounded and unbounded, -rounds rounds); writes bin/hostile-load.md")
	fs.DurationVar(&o.hostileDuration, "hostile-duration", 10*time.Second, "how long each hostile flood lasts")
	fs.IntVar(&o.seedWorkers, "seed-workers", 64, "concurrent writers that seed the caches")
	fs.StringVar(&o.webhooks, "webhooks", "", "register Steward's webhook configurations as this file has them (a `helm template` of the chart with an install's values, say), relative to the repository root, instead of manifests/base/webhooks.yaml")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.concurrency, err = bench.ParseInts("concurrency", *conc, false); err != nil {
		return o, err
	}
	if *wl != "" {
		o.workloads = map[string]bool{}
		for _, s := range strings.Split(*wl, ",") {
			if s = strings.TrimSpace(s); s != "burst" && workloadNamed(s) == nil {
				return o, fmt.Errorf("-workloads: unknown workload %q", s)
			}
			o.workloads[s] = true
		}
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	case o.duration <= 0 || o.rounds < 1 || o.warmup < 0 || o.burstWriters < 1 || o.burstDuration <= 0:
		return o, errors.New("-duration, -rounds, -burst-writers and -burst-duration must be positive, -warmup not negative")
	case o.objects < 0:
		return o, errors.New("-objects must not be negative")
	case o.seedWorkers < 1:
		return o, errors.New("-seed-workers must be positive")
	}
	return o, nil
}

// runs says whether a workload was selected.
func (o options) runs(name string) bool { return o.workloads == nil || o.workloads[name] }

func main() {
	var err error
	if len(os.Args) == 6 && os.Args[1] == allowAllCommand {
		err = serveAllowAll(os.Args[2], os.Args[3], os.Args[4], os.Args[5])
	} else if opts, perr := parseOptions(os.Args[1:]); perr != nil {
		err = perr
	} else {
		err = run(context.Background(), opts)
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "load: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, opts options) error {
	root, err := harness.RepoRoot()
	if err != nil {
		return err
	}
	if opts.hostile {
		return runHostile(ctx, opts.rounds, opts.hostileDuration, bench.InRoot(root, "bin/hostile-load.md"))
	}
	res, err := measureAll(ctx, opts, root)
	if err != nil {
		return err
	}
	if opts.handlerBench != "" {
		data, err := os.ReadFile(bench.InRoot(root, opts.handlerBench))
		res.HandlerBench = benchLines(string(data))
		if err != nil {
			return err
		}
	}
	return writeReport(bench.InRoot(root, opts.out), res)
}
