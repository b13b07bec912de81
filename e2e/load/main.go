// Command load measures what admission costs the API server: closed-loop
// writers drive realistic GitOps and control-plane traffic through a real
// kube-apiserver and etcd (the e2e harness) under four configurations,
// alternated: (a) no admission webhooks, (b) a ValidatingAdmissionPolicy
// with fleetguard's core decision in CEL, (c) an allow-all
// controller-runtime webhook registered exactly as Steward's webhooks are,
// and (d) Steward with every rule, registered from its rendered manifests.
// It writes docs/benchmarks.md and a latency chart. `make bench` runs it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stewardhq/steward/e2e/harness"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == allowAllCommand {
		if err := runAllowAllServer(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "allow-all webhook: %v\n", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(realMain(os.Args[1:]))
}

func realMain(args []string) int {
	opts, err := parseOptions(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "load: %v\n", err)
		return 2
	}
	root, err := harness.RepoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "load: %v\n", err)
		return 1
	}
	if opts.hostile {
		out := ""
		if opts.hostileOut != "" {
			out = inRoot(root, opts.hostileOut)
		}
		if err := runHostile(context.Background(), opts.rounds, opts.hostileDuration, out); err != nil {
			fmt.Fprintf(os.Stderr, "load: %v\n", err)
			return 1
		}
		return 0
	}
	var res *results
	if opts.renderOnly != "" {
		data, err := os.ReadFile(opts.renderOnly)
		if err == nil {
			res = &results{}
			err = json.Unmarshal(data, res)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "load: reading %s: %v\n", opts.renderOnly, err)
			return 1
		}
	} else {
		if res, err = run(context.Background(), opts, root); err != nil {
			fmt.Fprintf(os.Stderr, "load: %v\n", err)
			return 1
		}
	}
	if opts.handlerBench != "" {
		data, err := os.ReadFile(inRoot(root, opts.handlerBench))
		if err != nil {
			fmt.Fprintf(os.Stderr, "load: %v\n", err)
			return 1
		}
		res.HandlerBench = benchLines(string(data))
	}
	// The report first: a measurement that cannot be saved as JSON must
	// still be reported.
	if err := writeReport(root, opts, res); err != nil {
		fmt.Fprintf(os.Stderr, "load: %v\n", err)
		return 1
	}
	if opts.renderOnly == "" && opts.jsonOut != "" {
		if err := writeJSON(inRoot(root, opts.jsonOut), res); err != nil {
			fmt.Fprintf(os.Stderr, "load: writing the raw results: %v\n", err)
			return 1
		}
	}
	logf("wrote %s and %s", opts.out, opts.chart)
	return 0
}

func writeJSON(path string, res *results) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
