package main

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/bench"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the code")

// sampleLoad is a load run whose figures are made up but cover what the
// report shows: every workload at 1 and 16 writers under each
// configuration, the burst, the large caches, profiles, handler
// benchmarks and warnings.
func sampleLoad() *results {
	res := &results{
		Run: bench.Run{Machine: bench.Machine{CPUs: 2, CPUModel: "Test CPU", Commit: "abc1234"}, Started: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC),
			Warnings: []string{"cleaning up after managed-create: a | b\nsecond line"}},
		Options: options{rounds: 2, duration: 2 * time.Second, warmup: 500 * time.Millisecond, concurrency: []int{1, 16},
			burstWriters: 100, burstDuration: 5 * time.Second},
		Memory:       memReport{IdleRSS: 40 << 20, PeakBeforeBurst: 48 << 20, PeakSmall: 60 << 20, CachedRSS: 90 << 20, PeakLarge: 120 << 20, SoftLimit: 241591910, CachedObjects: 1200, MostCachedObjects: 1500},
		Seeded:       &bench.SeedStep{Total: 1300, Added: 1300, XRs: 200, MRs: 1000, Flux: 100, Took: 42 * time.Second},
		Profiles:     []profile{{Title: "CPU, claim-create", Path: "bin/bench/claim-create.cpu.pprof", Top: "File: steward\nBuild ID: 123\nType: cpu\n      flat  flat%\n     10ms 50.00% runtime.mallocgc\n"}},
		Webhooks:     []string{"fleetguard.steward.dev", "claimguard.steward.dev"},
		HandlerBench: "pkg: github.com/stewardhq/steward/webhooks/fleetguard\nBenchmarkFleetguard-2   1000   1234 ns/op\n",
	}
	res.Finished = res.Started.Add(time.Hour)
	mk := func(wl string, wi int, cfg configID, ci, writers int, burst bool) *point {
		rate := 400 / float64(ci+1) * float64(min(writers, 4)) / float64(wi%3+1)
		p := &point{Workload: wl, Config: cfg, Writers: writers, Burst: burst, Elapsed: 4 * time.Second,
			Succeeded: int(rate * 4), P50: time.Duration(1000+250*ci+37*wi) * time.Microsecond,
			P90: time.Duration(2000+300*ci) * time.Microsecond, P99: time.Duration(5000+900*ci+wi) * time.Microsecond,
			CPU: map[string]time.Duration{procAPIServer: time.Duration(900+50*ci) * time.Millisecond, procEtcd: 200 * time.Millisecond,
				procSteward: time.Duration(10+5*wi) * time.Millisecond, procAllowAll: 30 * time.Millisecond, procLoad: 100 * time.Millisecond},
			MachineBusy: 2500 * time.Millisecond, RoundRates: []float64{rate * 1.1, rate * 0.9}}
		w := workloadNamed(wl)
		if w.Denies[cfg] {
			p.Succeeded, p.Denied = 0, p.Succeeded
		}
		// The match conditions keep the agent's writes and those to
		// unmarked objects from the webhooks.
		if webhookProc[cfg] != "" && w.User != bench.AgentUser && !strings.HasPrefix(wl, "plain-") {
			p.Calls = float64(p.Answered()) * 1.02
		}
		if cfg == cfgSteward && p.Calls > 0 {
			p.DecisionP99 = math.Pow(2, -float64(80+wi)/8)
		}
		if ci == 2 && wi == 4 {
			p.Failed, p.Errors = 3, []string{"timeout"}
		}
		return p
	}
	for wi, w := range workloads {
		for _, n := range res.Options.concurrency {
			for ci, cfg := range allConfigs {
				if w.Name == "flux-event-create" && cfg == cfgPolicy && n == 16 {
					continue // a point missing from the run
				}
				res.Points = append(res.Points, mk(w.Name, wi, cfg, ci, n, false))
			}
		}
	}
	for ci, cfg := range allConfigs {
		res.Points = append(res.Points, mk("fleet-configmap-update-human", 3, cfg, ci, res.Options.burstWriters, true))
	}
	return res
}

// TestReportMatchesItsGoldenFiles writes the load run's section and its
// chart and compares them with testdata/: a change to how they are written
// must not change what they say. `go test ./bench/load -run Golden -update`
// rewrites the files after an intended change.
func TestReportMatchesItsGoldenFiles(t *testing.T) {
	dir := t.TempDir()
	if err := writeReport(filepath.Join(dir, "benchmarks.md"), sampleLoad()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"benchmarks.md", "benchmark-latency.svg"} {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		bench.Golden(t, f, string(got), *update)
	}
}
