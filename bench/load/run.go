package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/stewardhq/steward/bench"
	"github.com/stewardhq/steward/e2e/harness"
)

// loadRun is one run of the load tool.
type loadRun struct {
	opts          options
	root, workDir string
	c             *cluster
	nonce         string
	mix           *bench.Mix // the large caches, once seeded
	seq           int        // offsets writers' sequence numbers, so names stay fresh
	k             int        // rounds so far, to alternate the order of configurations
	apiProfiles   int        // the API server's profiles saved so far (-api-profiles)
	res           *results
}

func measureAll(ctx context.Context, opts options, root string) (*results, error) {
	b := &loadRun{opts: opts, root: root, workDir: bench.InRoot(root, "bin/bench")}
	b.res = &results{Run: bench.NewRun(ctx), Options: opts}
	b.nonce = strconv.FormatInt(time.Now().UnixNano()%(1<<30), 36)
	if err := os.MkdirAll(b.workDir, 0o755); err != nil {
		return nil, err
	}
	if opts.apiProfiles != "" {
		if err := os.MkdirAll(opts.apiProfiles, 0o755); err != nil {
			return nil, err
		}
	}
	bench.Logf("starting kube-apiserver, etcd, steward and the allow-all webhook")
	var err error
	var registered *harness.Webhooks
	if opts.webhooks != "" {
		data, err := os.ReadFile(bench.InRoot(root, opts.webhooks))
		if err != nil {
			return nil, fmt.Errorf("-webhooks: %w", err)
		}
		w, err := harness.ParseWebhooks(opts.webhooks, data)
		if err != nil {
			return nil, fmt.Errorf("-webhooks: %w", err)
		}
		registered = &w
	}
	if b.c, err = startCluster(ctx, b.workDir, registered); err != nil {
		return nil, err
	}
	defer b.c.stop()
	for _, wh := range b.c.steward.Validating.Webhooks {
		b.res.Webhooks = append(b.res.Webhooks, wh.Name)
	}
	for _, wh := range b.c.steward.Mutating.Webhooks {
		b.res.Webhooks = append(b.res.Webhooks, wh.Name)
	}
	if err := b.c.switchTo(ctx, cfgNone); err != nil {
		return nil, err
	}
	time.Sleep(3 * time.Second)
	mem := &b.res.Memory
	mem.IdleRSS, _ = b.stewardMemory()
	if s, err := bench.Scrape(b.c.env.Steward.MetricsRequest(bench.ProtoFormat())); err == nil {
		// Without a limit the runtime reports math.MaxInt64.
		if v := harness.SumFamilies(s, "go_gc_gomemlimit_bytes", nil); v > 0 && v < math.MaxInt64 {
			mem.SoftLimit = int64(v)
		}
	}

	// Phase 1: the Fleet workloads and the burst, with small caches.
	if err := b.runPhase(ctx, 1); err != nil {
		return nil, err
	}
	_, mem.PeakBeforeBurst = b.stewardMemory()
	if opts.runs("burst") {
		w := workloadNamed("fleet-configmap-update-human")
		if err := b.runPoints(ctx, w, []int{opts.burstWriters}, 1, opts.burstDuration, true); err != nil {
			return nil, err
		}
	}
	_, mem.PeakSmall = b.stewardMemory()

	// Phase 2: seed the large caches, restart Steward so it starts with
	// them, and run the Crossplane and Flux workloads.
	if slices.ContainsFunc(workloads, func(w *workload) bool { return w.Phase == 2 && opts.runs(w.Name) }) {
		if err := b.c.switchTo(ctx, cfgNone); err != nil {
			return nil, err
		}
		bench.Logf("seeding %d objects (1 XR : 5 MRs : ½ Flux object)", opts.objects)
		b.mix = &bench.Mix{Dyn: b.c.users[""].Dyn, Workers: opts.seedWorkers}
		step, err := b.mix.GrowTo(ctx, opts.objects)
		if err != nil {
			return nil, err
		}
		b.res.Seeded = &step
		bench.Logf("seeded in %s; restarting steward", step.Took.Round(time.Second))
		if err := b.c.env.Steward.Restart(ctx); err != nil {
			return nil, fmt.Errorf("restarting steward: %w", err)
		}
		time.Sleep(3 * time.Second)
		mem.CachedRSS, _ = b.stewardMemory()
		mem.CachedObjects = b.cachedObjects()
		if err := b.runPhase(ctx, 2); err != nil {
			return nil, err
		}
		_, mem.PeakLarge = b.stewardMemory()
		if opts.profile {
			b.profile("heap?gc=1", "steward.heap.pprof", "heap", "-sample_index=inuse_space")
		}
	}
	b.res.Finished = time.Now()
	return b.res, nil
}

func (b *loadRun) runPhase(ctx context.Context, phase int) error {
	for _, w := range workloads {
		if w.Phase != phase || !b.opts.runs(w.Name) {
			continue
		}
		if err := b.runPoints(ctx, w, b.opts.concurrency, b.opts.rounds, b.opts.duration, false); err != nil {
			return err
		}
		if phase == 2 {
			// What a workload created is still cached: the peak covers it.
			b.res.Memory.MostCachedObjects = max(b.res.Memory.MostCachedObjects, b.cachedObjects())
		}
		if w.cleanup != nil {
			// Without admission, so that deleting thousands of objects does
			// not go through webhooks; a failed cleanup only leaves objects.
			if err := b.c.switchTo(ctx, cfgNone); err != nil {
				return err
			}
			if err := w.cleanup(ctx, b.c); err != nil {
				b.res.Warnf("cleaning up after %s: %v", w.Name, err)
			}
		}
	}
	return nil
}

// runPoints measures a workload at each number of writers, in rounds: each
// round measures every configuration in turn, alternating the direction,
// so the points compared with each other are measured seconds apart and
// drift in the machine's speed affects them alike. The first judged
// workload at 16 writers (or the most) is profiled once, in an extra run.
func (b *loadRun) runPoints(ctx context.Context, w *workload, levels []int, rounds int, duration time.Duration, burst bool) error {
	profile := b.opts.profile && !burst && w.User != bench.AgentUser
	for _, n := range levels {
		points := map[configID][]*point{}
		for range rounds {
			order := slices.Clone(allConfigs)
			if b.k++; b.k%2 == 0 {
				slices.Reverse(order)
			}
			for _, cfg := range order {
				if err := b.c.switchTo(ctx, cfg); err != nil {
					return err
				}
				p, err := b.measure(ctx, w, cfg, n, duration)
				if err != nil {
					return err
				}
				p.Burst, points[cfg] = burst, append(points[cfg], p)
				if cfg == cfgSteward && profile && (n == 16 || n == slices.Max(levels)) {
					b.cpuProfile(ctx, w, n)
					profile = false
				}
			}
		}
		for _, cfg := range allConfigs {
			p := merge(points[cfg])
			b.res.Points = append(b.res.Points, p)
			if want := w.Denies[p.Config]; want && p.Succeeded > 0 || !want && p.Denied > 0 {
				b.res.Warnf("%s (%s) %d writers: %d writes allowed and %d denied; the configuration should have %s them all",
					w.Name, p.Config, p.Writers, p.Succeeded, p.Denied, map[bool]string{true: "denied", false: "allowed"}[want])
			}
		}
	}
	return nil
}

// measure runs one round of a point.
func (b *loadRun) measure(ctx context.Context, w *workload, cfg configID, writers int, duration time.Duration) (*point, error) {
	ops, err := w.prepare(ctx, b, writers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.Name, err)
	}
	var before, after reading
	profiled := func() error { return nil }
	p := runLoad(ctx, ops, b.opts.warmup, duration, b.seq, func() {
		before = b.read()
		if b.opts.apiProfiles != "" {
			profiled = b.apiProfile(fmt.Sprintf("%s-%s-%dw", w.Name, cfg, writers), duration)
		}
	}, func() { after = b.read() })
	if err := profiled(); err != nil {
		b.res.Warnf("the API server's profile of %s (%s, %d writers): %v", w.Name, cfg, writers, err)
	}
	b.seq += 10_000_000
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	p.Workload, p.Config = w.Name, cfg
	p.fill(before, after)
	bench.Logf("%-30s (%s) %3d writers: %7.0f writes/s  p50 %6.2fms  denied %d  errors %d  webhook calls %.0f  other load %.2f cores",
		w.Name, cfg, writers, p.Rate(), ms(percentile(p.latencies, 0.5)), p.Denied, p.Failed, p.Calls, p.OtherCores())
	for _, e := range p.Errors {
		bench.Logf("  error: %s", e)
	}
	return p, nil
}

func (b *loadRun) stewardMemory() (rss, peak int64) {
	m, _ := harness.ProcessMemory(b.c.env.Steward.PID())
	return m.RSS, m.Peak
}

// cachedObjects is what claimguard reports holding in its caches.
func (b *loadRun) cachedObjects() float64 {
	s, _ := bench.Scrape(b.c.env.Steward.MetricsRequest(bench.ProtoFormat()))
	return harness.SumFamilies(s, "steward_claimguard_cached_objects", nil)
}

// cpuProfile profiles Steward's CPU during an extra run of w with
// writers, configuration (d) in effect, whose figures are left out.
func (b *loadRun) cpuProfile(ctx context.Context, w *workload, writers int) {
	secs, done := max(int(b.opts.duration.Seconds()), 2), make(chan struct{})
	go func() {
		defer close(done)
		b.profile(fmt.Sprintf("profile?seconds=%d", secs), w.Name+".cpu.pprof", "CPU, "+w.Name)
	}()
	if _, err := b.measure(ctx, w, cfgSteward, writers, time.Duration(secs)*time.Second); err != nil {
		b.res.Warnf("profiling %s: %v", w.Name, err)
	}
	<-done
}

// profile saves a pprof profile of Steward and keeps its summary
// (`go tool pprof -top`) for the report.
func (b *loadRun) profile(query, file, title string, pprofArgs ...string) {
	path := filepath.Join(b.workDir, file)
	if err := bench.FetchPprof(b.c.pprofAddr, query, path); err != nil {
		b.res.Warnf("profile %s: %v", title, err)
		return
	}
	out, err := exec.Command("go", append(append([]string{"tool", "pprof", "-top", "-nodecount=25"}, pprofArgs...), path)...).CombinedOutput()
	if err != nil {
		out = fmt.Appendf(nil, "(go tool pprof failed: %v)\n%s", err, out)
	}
	rel, _ := filepath.Rel(b.root, path)
	b.res.Profiles = append(b.res.Profiles, profile{Title: title, Path: rel, Top: string(out)})
}

// apiProfile starts taking the API server's CPU profile for the measured
// window and returns a function that waits for it and saves it in the
// -api-profiles directory as <name>-<n>.pprof. Steward's profile is
// Steward's share; this one shows what a configuration costs inside the
// API server, such as deciding, entry by entry, whether to call a webhook.
func (b *loadRun) apiProfile(name string, window time.Duration) (wait func() error) {
	b.apiProfiles++
	path := filepath.Join(b.opts.apiProfiles, fmt.Sprintf("%s-%d.pprof", name, b.apiProfiles))
	secs := max(int(window.Seconds()), 1)
	done := make(chan error, 1)
	go func() {
		data, err := b.c.users[""].Kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(secs)).Timeout(time.Duration(secs)*time.Second + time.Minute).DoRaw(context.Background())
		if err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
		done <- err
	}()
	return func() error { return <-done }
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
