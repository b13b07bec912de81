package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/e2e/harness"
)

// bench is one run of the load tool.
type bench struct {
	opts    options
	root    string
	workDir string
	c       *cluster
	aa      *allowAll
	sw      *switcher
	nonce   string
	seeded  *seeded
	seq     int
	res     *results
	// reviews are the AdmissionReviews recorded in (c), by workload and
	// webhook path (alone.go).
	reviews map[string]map[string][]byte
}

// judgedWorkloads are profiled (when -profile is on): the API server calls
// Steward for them.
var judgedWorkloads = []string{
	"fleet-configmap-update-human", "fleet-deployment-update-human",
	"claim-create", "managed-create", "helmrelease-update-v2beta1", "flux-event-create",
}

func (b *bench) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	logf("warning: %s", msg)
	b.res.Warnings = append(b.res.Warnings, msg)
}

// run measures everything and returns the results.
func run(ctx context.Context, opts options, root string) (*results, error) {
	b := &bench{opts: opts, root: root, workDir: inRoot(root, opts.workDir), reviews: map[string]map[string][]byte{}}
	b.res = &results{Started: time.Now(), Options: runParams{
		Duration: opts.duration, Rounds: opts.rounds, Warmup: opts.warmup, Concurrency: opts.concurrency,
		BurstWriters: opts.burstWriters, BurstDuration: opts.burstDuration,
		XRs: opts.xrs, MRs: opts.mrs, Flux: opts.flux,
	}}
	nonce := make([]byte, 3)
	_, _ = rand.Read(nonce)
	b.nonce = hex.EncodeToString(nonce)
	if err := os.MkdirAll(b.workDir, 0o755); err != nil {
		return nil, err
	}
	all := workloads()
	for _, w := range all {
		b.res.Workloads = append(b.res.Workloads, wlInfo{Name: w.Name, Title: w.Title, Short: w.Short, Phase: w.Phase, Verb: w.Verb, User: w.User, Denies: w.Denies})
	}

	logf("starting kube-apiserver, etcd and steward")
	var err error
	if b.c, err = startCluster(ctx, harness.DefaultConfig); err != nil {
		return nil, err
	}
	defer b.c.stop()
	b.res.Machine = describeMachine(ctx, b.c)
	for _, ns := range []string{fleetNamespace, fluxNamespace, claimsNamespace} {
		if err := b.c.ensureNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	if _, err := b.c.as(agentUser).kube.CoreV1().ConfigMaps(fleetNamespace).Create(ctx, fleetConfigMap(policyProbeName), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the policy probe: %w", err)
	}
	steward, err := b.c.snapshotWebhooks(ctx, 60*time.Second)
	if err != nil {
		return nil, err
	}
	b.res.Webhooks = steward.names()
	logf("steward's webhooks: %s", strings.Join(b.res.Webhooks, ", "))
	if b.aa, err = startAllowAll(ctx, b.workDir, steward.paths()); err != nil {
		return nil, err
	}
	defer b.aa.stop()
	if b.sw, err = newSwitcher(b.c, steward, b.aa); err != nil {
		return nil, err
	}
	if err := b.sw.switchTo(ctx, cfgNone); err != nil {
		return nil, err
	}
	time.Sleep(3 * time.Second)
	b.res.Memory.IdleRSS, b.res.Memory.IdleHeap = b.stewardMemory()
	if s, err := readStewardMetrics(b.c.steward()); err == nil {
		// Without a limit the runtime reports math.MaxInt64.
		if v := s.value("go_gc_gomemlimit_bytes", nil); v > 0 && v < math.MaxInt64 {
			b.res.Memory.SoftLimit = int64(v)
		}
	} else {
		b.warnf("reading steward's soft memory limit: %v", err)
	}

	// Phase 1: the Fleet workloads and the burst, with small caches.
	k := 0
	for _, w := range all {
		if w.Phase == 1 && opts.runs(w.Name) {
			if err := b.runWorkload(ctx, w, &k); err != nil {
				return nil, err
			}
		}
	}
	if m, err := harness.ProcessMemory(b.c.steward().PID()); err == nil {
		b.res.Memory.PeakBeforeBurst = m.Peak
	}
	if opts.runs("burst") {
		if err := b.runBurst(ctx, all, &k); err != nil {
			return nil, err
		}
	}
	if m, err := harness.ProcessMemory(b.c.steward().PID()); err == nil {
		b.res.Memory.PeakSmall = m.Peak
	}

	// Phase 2: seed the large caches, restart Steward so it starts with
	// them, and run the Crossplane and Flux workloads.
	phase2 := slices.ContainsFunc(all, func(w *workload) bool { return w.Phase == 2 && opts.runs(w.Name) })
	if phase2 {
		if err := b.sw.switchTo(ctx, cfgNone); err != nil {
			return nil, err
		}
		logf("seeding %d XRs, %d MRs and %d Flux objects", opts.xrs, opts.mrs, opts.flux)
		if b.seeded, err = seed(ctx, b.c, opts.xrs, opts.mrs, opts.flux); err != nil {
			return nil, err
		}
		b.res.Seeded = b.seeded
		logf("seeded in %s; restarting steward", b.seeded.Took.Round(time.Second))
		restart := time.Now()
		if err := b.c.steward().Restart(ctx); err != nil {
			return nil, fmt.Errorf("restarting steward: %w", err)
		}
		logf("steward ready with its caches after %s", time.Since(restart).Round(100*time.Millisecond))
		time.Sleep(3 * time.Second)
		b.res.Memory.CachedRSS, b.res.Memory.CachedHeap = b.stewardMemory()
		if s, err := readStewardMetrics(b.c.steward()); err == nil {
			if _, ok := s["steward_claimguard_cached_objects"]; ok {
				b.res.Memory.ClaimguardSeen = true
				b.res.Memory.CachedObjects = s.value("steward_claimguard_cached_objects", nil)
			}
		}
		for _, w := range all {
			if w.Phase == 2 && opts.runs(w.Name) {
				if err := b.runWorkload(ctx, w, &k); err != nil {
					return nil, err
				}
			}
		}
		if m, err := harness.ProcessMemory(b.c.steward().PID()); err == nil {
			b.res.Memory.PeakLarge = m.Peak
		}
		if opts.profile {
			b.heapProfile()
		}
	}
	if err := b.runAlone(ctx, all); err != nil {
		return nil, err
	}
	if b.res.MatchCosts, err = b.c.readMatchCosts(ctx); err != nil {
		b.warnf("reading the API server's match-condition metrics: %v", err)
	}
	b.res.Finished = time.Now()
	b.res.Machine.LoadAvgEnd = loadAvg()
	for _, p := range b.res.Points {
		var ours time.Duration
		for _, d := range p.CPU {
			ours += d
		}
		if other := p.MachineBusy - ours; other > 0 {
			b.res.OtherCPU += other
		}
		b.res.MeasuredTime += p.Elapsed
	}
	return b.res, nil
}

// order alternates the direction configurations are measured in.
func order(k int) []configID {
	out := slices.Clone(allConfigs)
	if k%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

// runWorkload measures one workload at every number of writers, in
// rounds: each round measures every configuration in turn (a b c d, then
// d c b a in the next round, ...), so the points compared with each other
// are measured seconds apart and drift in the machine's load affects them
// alike; a point sums its rounds. *k counts the rounds, so the direction
// alternates across levels and workloads too.
func (b *bench) runWorkload(ctx context.Context, w *workload, k *int) error {
	profiled := !b.opts.profile || !slices.Contains(judgedWorkloads, w.Name)
	for _, n := range b.opts.concurrency {
		rounds := map[configID][]*point{}
		for range b.opts.rounds {
			for _, cfg := range order(*k) {
				if err := b.sw.switchTo(ctx, cfg); err != nil {
					return err
				}
				p, err := b.recording(w, cfg, func() (*point, error) {
					return b.measure(ctx, w, cfg, n, b.opts.duration, false)
				})
				if err != nil {
					return err
				}
				rounds[cfg] = append(rounds[cfg], p)
				if cfg == cfgSteward && !profiled && (n == 16 || n == slices.Max(b.opts.concurrency)) {
					b.cpuProfile(ctx, w, n)
					profiled = true
				}
			}
			*k++
		}
		for _, cfg := range allConfigs {
			b.record(w, merge(rounds[cfg]))
		}
	}
	if w.Phase == 2 && b.res.Memory.ClaimguardSeen {
		// What a workload created is still cached: the memory peak covers it.
		if s, err := readStewardMetrics(b.c.steward()); err == nil {
			b.res.Memory.MostCachedObjects = max(b.res.Memory.MostCachedObjects, s.value("steward_claimguard_cached_objects", nil))
		}
	}
	if w.cleanup != nil {
		// Without admission, deleting thousands of objects does not go
		// through webhooks one by one; a failed cleanup only leaves
		// objects behind, so it is reported, not fatal.
		if err := b.sw.switchTo(ctx, cfgNone); err != nil {
			return err
		}
		start := time.Now()
		if err := w.cleanup(ctx, b); err != nil {
			b.warnf("cleaning up after %s: %v", w.Name, err)
		}
		logf("cleaned up after %s in %s", w.Name, time.Since(start).Round(100*time.Millisecond))
	}
	return nil
}

// runBurst measures the burst: many writers at once, each editing its own
// Fleet-managed ConfigMap as a person, so every write reaches Steward.
func (b *bench) runBurst(ctx context.Context, all []*workload, k *int) error {
	i := slices.IndexFunc(all, func(w *workload) bool { return w.Name == "fleet-configmap-update-human" })
	w := all[i]
	defer func() { *k++ }()
	for _, cfg := range order(*k) {
		if err := b.sw.switchTo(ctx, cfg); err != nil {
			return err
		}
		p, err := b.measure(ctx, w, cfg, b.opts.burstWriters, b.opts.burstDuration, true)
		if err != nil {
			return err
		}
		b.record(w, p)
	}
	return nil
}

// measure runs one point (or one round of it).
func (b *bench) measure(ctx context.Context, w *workload, cfg configID, writers int, duration time.Duration, burst bool) (*point, error) {
	ops, err := w.prepare(ctx, b, writers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.Name, err)
	}
	var before, after reading
	l := runLoad(ctx, ops, b.opts.warmup, duration, b.seq, func() { before = b.read() }, func() { after = b.read() })
	b.seq += 10_000_000
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	p := &point{
		Workload: w.Name, Config: cfg, Writers: writers, Burst: burst,
		Elapsed: l.Elapsed, Succeeded: l.Succeeded, Denied: l.Denied, Failed: l.Failed, Errors: l.FirstErrors,
		latencies: l.latencies,
	}
	p.fill(before, after)
	p.setLatencies()
	if m, err := harness.ProcessMemory(b.c.steward().PID()); err == nil {
		p.StewardRSS = m.RSS
	}
	logf("%-30s (%s) %3d writers: %7.0f writes/s  p50 %6.2fms  p99 %7.2fms  denied %d  errors %d  steward calls %.0f  other load %.2f cores",
		w.Name, cfg, writers, p.Rate(), ms(p.P50), ms(p.P99), p.Denied, p.Failed, p.StewardCalls, p.OtherCores())
	for _, e := range p.Errors {
		logf("  error: %s", e)
	}
	return p, nil
}

// record keeps a measured point and warns when the configuration did not
// answer as it should.
func (b *bench) record(w *workload, p *point) {
	b.res.Points = append(b.res.Points, p)
	switch wantDenied := w.Denies[p.Config]; {
	case wantDenied && p.Succeeded > 0:
		b.warnf("%s (%s) %d writers: %d writes were allowed that the configuration should deny", w.Name, p.Config, p.Writers, p.Succeeded)
	case !wantDenied && p.Denied > 0:
		b.warnf("%s (%s) %d writers: %d writes were denied that the configuration should allow", w.Name, p.Config, p.Writers, p.Denied)
	}
}

// stewardMemory reads Steward's resident memory and live heap.
func (b *bench) stewardMemory() (rss, heap int64) {
	if m, err := harness.ProcessMemory(b.c.steward().PID()); err == nil {
		rss = m.RSS
	} else {
		b.warnf("reading steward's memory: %v", err)
	}
	var err error
	if heap, err = heapAlloc(b.c.pprofAddr); err != nil {
		b.warnf("reading steward's heap: %v", err)
	}
	return rss, heap
}

// cpuProfile takes an unmeasured extra run of w with writers while
// profiling Steward's CPU (configuration (d) is in effect).
func (b *bench) cpuProfile(ctx context.Context, w *workload, writers int) {
	ops, err := w.prepare(ctx, b, writers)
	if err != nil {
		b.warnf("profiling %s: %v", w.Name, err)
		return
	}
	secs := max(int(b.opts.duration.Seconds()), 2)
	path := filepath.Join(b.workDir, w.Name+".cpu.pprof")
	done := make(chan error, 1)
	runLoad(ctx, ops, b.opts.warmup, time.Duration(secs)*time.Second+500*time.Millisecond, b.seq, func() {
		go func() { done <- fetchProfile(b.c.pprofAddr, fmt.Sprintf("profile?seconds=%d", secs), path) }()
	}, func() {})
	b.seq += 10_000_000
	if err := <-done; err != nil {
		b.warnf("profiling %s: %v", w.Name, err)
		return
	}
	b.res.Profiles = append(b.res.Profiles, profile{Workload: w.Name, Kind: "cpu", Path: b.rel(path), Top: pprofTop(path, "")})
}

// heapProfile records where Steward's live heap is, with the large caches.
func (b *bench) heapProfile() {
	path := filepath.Join(b.workDir, "steward.heap.pprof")
	if err := fetchProfile(b.c.pprofAddr, "heap?gc=1", path); err != nil {
		b.warnf("heap profile: %v", err)
		return
	}
	b.res.Profiles = append(b.res.Profiles, profile{Kind: "heap", Path: b.rel(path), Top: pprofTop(path, "inuse_space")})
}

// pprofTop summarises a profile with `go tool pprof -top`.
func pprofTop(path, sampleIndex string) string {
	args := []string{"tool", "pprof", "-top", "-nodecount=25"}
	if sampleIndex != "" {
		args = append(args, "-sample_index="+sampleIndex)
	}
	out, err := exec.Command("go", append(args, path)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(go tool pprof failed: %v)\n%s", err, out)
	}
	return string(out)
}

func (b *bench) rel(path string) string {
	if r, err := filepath.Rel(b.root, path); err == nil {
		return r
	}
	return path
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
