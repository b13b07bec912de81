// Command scale measures Steward's memory, start-up and watches with large
// caches against a real kube-apiserver and etcd (the e2e harness): empty
// caches, many MR kinds, many Fleet-managed Deployments, and the
// Crossplane and Flux mix grown step by step, each with client-go's
// WatchList on and off, the background audit off and on, and Go's default
// collection pace. It writes its section of docs/benchmarks.md and a
// memory chart. `make bench-scale` runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/stewardhq/steward/bench"
	"github.com/stewardhq/steward/e2e/harness"
)

// options are the scale tool's flags; the defaults are the goals' scale.
type options struct {
	scaleSizes                                           []int
	mrKinds, objectsPerKind, fleetWorkloads, seedWorkers int
	settle                                               time.Duration
	out, heapProfiles                                    string
}

func parseOptions(args []string) (o options, err error) {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	sizes := fs.String("scale-objects", bench.JoinInts(fullScaleSizes), "comma-separated, increasing numbers of objects (1 XR : 5 MRs : ½ Flux object) to grow the caches to")
	fs.IntVar(&o.mrKinds, "mr-kinds", fullMRKinds, "generated MR kinds of the many-kinds scenario (0 skips it)")
	fs.IntVar(&o.objectsPerKind, "objects-per-kind", 2, "objects of each generated MR kind")
	fs.IntVar(&o.fleetWorkloads, "fleet-workloads", fullFleetWorkloads, "Fleet-managed Deployments of the Fleet scenario (0 skips it)")
	fs.IntVar(&o.seedWorkers, "seed-workers", 64, "concurrent writers that seed the caches")
	fs.DurationVar(&o.settle, "settle", 5*time.Second, "how long after it is ready Steward's synced memory is read")
	fs.StringVar(&o.out, "out", "docs/benchmarks.md", "report to write the cache-at-scale section of, relative to the repository root; the chart is written beside it")
	fs.StringVar(&o.heapProfiles, "heap-profiles", "", "a directory to save Steward's heap profile in at each measurement, taken after the collections that settle it")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if *sizes != "" {
		if o.scaleSizes, err = bench.ParseInts("scale-objects", *sizes, true); err != nil {
			return o, err
		}
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	case o.mrKinds < 0 || o.objectsPerKind < 0 || o.fleetWorkloads < 0 || o.seedWorkers < 1 || o.settle < 0:
		return o, errors.New("-mr-kinds, -objects-per-kind, -fleet-workloads and -settle must not be negative, -seed-workers must be positive")
	case o.mrKinds > 999:
		return o, errors.New("-mr-kinds: at most 999 (the generated kinds are numbered with three digits)")
	}
	return o, nil
}

func main() {
	err := run(context.Background(), os.Args[1:])
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "scale: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	opts, err := parseOptions(args)
	if err != nil {
		return err
	}
	root, err := harness.RepoRoot()
	if err != nil {
		return err
	}
	res, err := measureScale(ctx, opts)
	if err != nil {
		return err
	}
	return writeScaleReport(bench.InRoot(root, opts.out), res)
}
