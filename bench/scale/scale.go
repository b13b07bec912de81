package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/bench"
	"github.com/stewardhq/steward/e2e/harness"
)

// The cache-at-scale scenarios at full scale: cached objects in the
// Crossplane and Flux mix, MR kinds, and Fleet-managed Deployments.
var fullScaleSizes = []int{bench.FullObjects, 250_000, 500_000}

const (
	fullMRKinds, fullFleetWorkloads = 500, 2000
	// watchListOff is the environment that switches client-go's streaming
	// list (WatchList) off, so Steward's informers start with a paginated
	// LIST and then WATCH, as before Kubernetes 1.32's clients.
	watchListOff = "KUBE_FEATURE_WatchListClient=false"
	// scaleReadyTimeout bounds Steward's start-up with the largest caches,
	// and fillTimeout how long after its first ready answer claimguard
	// may take to hold every seeded object.
	scaleReadyTimeout = 15 * time.Minute
	fillTimeout       = 5 * time.Minute
)

// scaler runs the cache-at-scale scenarios against one API server, growing
// its contents between measurements.
type scaler struct {
	opts         options
	env          *harness.Env
	admin, agent *bench.Clients // agent writes the Fleet-managed Deployments
	pprofAddr    string
	quiet        bool // Steward stopped and its webhooks removed
	mix          bench.Mix
	res          *scaleResults
}

// measureScale measures Steward's memory, start-up and watches with empty
// caches, many MR kinds and many Fleet-managed Deployments, then with
// caches of growing size, each with client-go's WatchList on and off.
func measureScale(ctx context.Context, opts options) (*scaleResults, error) {
	res := &scaleResults{Run: bench.NewRun(ctx), Options: opts}
	var err error
	if res.Limit, err = harness.RenderedMemoryLimit(); err != nil {
		return nil, err
	}
	bench.Logf("starting kube-apiserver and etcd")
	env, err := harness.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting the API server: %w", err)
	}
	defer env.Stop()
	// Seeding is measured by how fast the server takes it.
	s := &scaler{opts: opts, env: env, res: res, admin: bench.NewClients(env, "", nil, 2*time.Minute), agent: bench.NewClients(env, bench.AgentUser, nil, 2*time.Minute)}
	s.mix = bench.Mix{Dyn: s.admin.Dyn, Workers: opts.seedWorkers}
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	s.pprofAddr = "127.0.0.1:" + strconv.Itoa(port)
	// The PolicyReport CRDs Steward ships as well, so that the background
	// audit publishes as in a cluster that has them.
	if err := bench.Prepare(ctx, env, filepath.Join("manifests", "policyreport-crds")); err != nil {
		return nil, err
	}

	// Empty caches, the base of the Fleet and MR-kind scenarios, which are
	// removed once measured.
	if err := s.measureBoth(ctx, scenarioEmpty, 0, 0, nil); err != nil {
		return nil, err
	}
	if opts.mrKinds > 0 {
		err := s.measureAside(ctx, scenarioKinds, func() (int, float64, error) {
			bench.Logf("creating %d MR kinds with %d objects each", opts.mrKinds, opts.objectsPerKind)
			n, err := bench.SeedKinds(ctx, env, s.admin.Dyn, opts.mrKinds, opts.objectsPerKind, opts.seedWorkers)
			return n, float64(n), err
		}, func() error { return bench.RemoveKinds(ctx, env) })
		if err != nil {
			return nil, err
		}
	}
	if opts.fleetWorkloads > 0 {
		err := s.measureAside(ctx, scenarioFleet, func() (int, float64, error) {
			bench.Logf("creating %d Fleet-managed Deployments", opts.fleetWorkloads)
			return opts.fleetWorkloads, 0, bench.SeedFleet(ctx, s.agent.Kube, s.admin.Kube, opts.fleetWorkloads, opts.seedWorkers)
		}, func() error {
			// One DeleteCollection of thousands of Deployments can outlast
			// the API server's request timeout on a busy machine, which
			// resets the stream; what it deleted stays deleted, so the
			// next call removes the rest.
			var err error
			for range 3 {
				if err = s.admin.Kube.AppsV1().Deployments(bench.FleetNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: bench.Label + "=" + scenarioFleet}); err == nil {
					return nil
				}
				bench.Logf("removing the Fleet-managed Deployments: %v; again", err)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	for _, size := range opts.scaleSizes {
		if err := s.quiesce(ctx); err != nil {
			return nil, err
		}
		bench.Logf("seeding up to %d objects (1 XR : 5 MRs : ½ Flux object)", size)
		step, err := s.mix.GrowTo(ctx, size)
		if err != nil {
			return nil, err
		}
		res.Seeding = append(res.Seeding, step)
		bench.Logf("seeded %d objects in %s (%.0f objects/s)", step.Added, step.Took.Round(time.Second), step.Rate())
		if err := s.measureBoth(ctx, scenarioMix, s.mix.Total(), float64(s.mix.Composed()), nil); err != nil {
			return nil, err
		}
		if size == auditScale(opts.scaleSizes) {
			// The mix as it is with the background audit off and with it
			// publishing every auditEvery, WatchList on: the difference is
			// what the audit costs.
			for _, sc := range []struct{ name, config string }{
				{scenarioAuditOff, harness.DefaultConfig + "audit:\n  interval: 0s\n"},
				{scenarioAuditOn, harness.DefaultConfig + "audit:\n  interval: " + auditEvery.String() + "\n"},
			} {
				if err := s.measure(ctx, sc.config, sc.name, true, s.mix.Total(), float64(s.mix.Composed()), nil); err != nil {
					return nil, err
				}
			}
		}
		// The start-up pace at the docs' scale, and at the largest, where
		// it caps the heap's growth (webhooks/webhookserver/startupgc.go): the mix
		// with GOGC=100 set, paired with its own measurements of this size,
		// gives the CPU and peak memory of collecting harder until ready.
		if size == auditScale(opts.scaleSizes) || size == opts.scaleSizes[len(opts.scaleSizes)-1] {
			if err := s.measureBoth(ctx, scenarioGC100, s.mix.Total(), float64(s.mix.Composed()), []string{"GOGC=100"}); err != nil {
				return nil, err
			}
		}
	}
	res.Finished = time.Now()
	return res, nil
}

// Scenario names of scaleMeasure.
const (
	scenarioEmpty = "empty"
	scenarioMix   = "mix"
	scenarioFleet = "fleet"
	scenarioKinds = "kinds"
	// The mix again, with the background audit off, and with it every
	// auditEvery: what the audit adds.
	scenarioAuditOff = "audit-off"
	scenarioAuditOn  = "audit-on"
	// The mix again with GOGC=100 set, so that Steward starts at Go's
	// default pace instead of collecting harder until ready: what
	// that costs in CPU and saves in peak memory.
	scenarioGC100 = "gogc-100"
)

// auditEvery is the audit interval of the audit-on scenario: the first
// pass runs as soon as the caches answer, a second one auditEvery later,
// both before the figures are read.
const auditEvery = 15 * time.Second

// auditScale is the size of the mix at which the audit scenarios run: the
// docs' scale (10k XRs, 50k MRs, 5k Flux objects), or the largest size of
// a reduced run.
func auditScale(sizes []int) int {
	for _, n := range sizes {
		if n >= fullScaleSizes[0] {
			return n
		}
	}
	if len(sizes) == 0 {
		return 0
	}
	return sizes[len(sizes)-1]
}

// quiesce stops Steward and removes its webhook configurations, so that
// seeding neither waits for admission nor makes Steward's informers
// process every event: the measurement is of a Steward that starts with
// the objects already there. It does nothing when they are so already.
func (s *scaler) quiesce(ctx context.Context) error {
	if s.quiet {
		return nil
	}
	if st := s.env.Steward; st != nil {
		if err := st.Stop(); err != nil {
			return err
		}
	}
	for _, obj := range []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: harness.WebhookConfigurationName}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: harness.WebhookConfigurationName}},
	} {
		if err := s.env.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing steward's webhook configurations: %w", err)
		}
	}
	// The API server takes a moment to stop calling a removed webhook.
	time.Sleep(2 * time.Second)
	s.quiet = true
	return nil
}

// measureBoth measures a scenario with WatchList on, then off.
func (s *scaler) measureBoth(ctx context.Context, scenario string, seeded int, cached float64, env []string) error {
	for _, wl := range []bool{true, false} {
		if err := s.measure(ctx, harness.DefaultConfig, scenario, wl, seeded, cached, env); err != nil {
			return err
		}
	}
	return nil
}

// measureAside measures a scenario seeded on top of the empty caches, and
// then removes what it seeded; seed returns how many objects it created
// and how many of them claimguard holds.
func (s *scaler) measureAside(ctx context.Context, scenario string, seed func() (int, float64, error), remove func() error) error {
	if err := s.quiesce(ctx); err != nil {
		return err
	}
	n, cached, err := seed()
	if err != nil {
		return err
	}
	if err := s.measure(ctx, harness.DefaultConfig, scenario, true, n, cached, nil); err != nil {
		return err
	}
	if err := s.quiesce(ctx); err != nil {
		return err
	}
	return remove()
}

// measure starts Steward (configured by config, WatchList on or off, env
// added to its environment) with the cluster as it is, and keeps what the
// scenario reports. cached is what claimguard should hold once synced;
// seeded the objects the scenario put in the caches.
func (s *scaler) measure(ctx context.Context, config, scenario string, watchList bool, seeded int, cached float64, env []string) error {
	if err := s.quiesce(ctx); err != nil {
		return err
	}
	before, err := s.watches(ctx)
	if err != nil {
		s.res.Warnf("%v", err)
	}
	limit := sizedLimit(s.res.Limit, seeded)
	opts := harness.StewardOptions{Config: config, ProvideCerts: true, ReadyTimeout: scaleReadyTimeout,
		Args: []string{"--pprof-bind-address", s.pprofAddr},
		Env:  []string{"MEMORY_LIMIT=" + strconv.FormatInt(limit, 10)}}
	if !watchList {
		opts.Env = append(opts.Env, watchListOff)
	}
	opts.Env = append(opts.Env, env...)
	st, err := s.env.RestartStewardWith(ctx, opts)
	readyAt := time.Now()
	s.quiet = false
	if err != nil {
		return fmt.Errorf("starting steward (%s, WatchList %s): %w", scenario, onOff(watchList), err)
	}
	m := &scaleMeasure{Scenario: scenario, WatchList: watchList, Seeded: seeded, Startup: st.StartupTime(), ReadyPeakRSS: st.ReadyPeak(), Limit: limit}
	if m.StartupCPU, err = harness.ProcessCPU(st.PID()); err != nil {
		s.res.Warnf("reading steward's CPU time: %v", err)
	}
	// Ready means synced, but claimguard's counts come from its snapshot,
	// taken a moment later. Claimguard answers ready after a minute even
	// if its lists are not stored yet: the start-up then ends when they
	// are, and its peak is read then (filling 500k objects in pages at
	// GOGC=100 took over two minutes after that).
	deadline := time.Now().Add(fillTimeout)
	for ; ; time.Sleep(500 * time.Millisecond) {
		fams, err := bench.Scrape(st.MetricsRequest(bench.ProtoFormat()))
		if err == nil && harness.SumFamilies(fams, "steward_claimguard_cached_objects", nil) >= cached {
			if time.Since(readyAt) > 5*time.Second {
				if mem, err := harness.ProcessMemory(st.PID()); err == nil {
					m.ReadyPeakRSS, m.FilledAfterReady = mem.Peak, time.Since(readyAt)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			s.res.Warnf("%s, WatchList %s: claimguard did not report %.0f cached objects within %s of its first ready answer; the start-up peak is read at that answer", scenario, onOff(watchList), cached, fillTimeout)
			break
		}
	}
	// Settled: start-up work done, then the collections Go's runtime
	// forces on an idle process every two minutes, triggered at once
	// (pprof's heap?gc=1 runs one), so that the resident memory no longer
	// holds start-up garbage; then the runtime's scavenger returns what
	// they freed to the kernel, at its own pace. Two, because the
	// scavenger's goal after a collection is scaled from the heap in use
	// at the end of the one before: after the first, that is the heap of
	// the start-up, and the scavenger may keep most of what it freed.
	bench.Sleep(ctx, s.opts.settle)
	if scenario == scenarioAuditOn {
		bench.Sleep(ctx, 2*auditEvery) // at least two passes, the second with its reports in place
	}
	for i := range 2 {
		save := ""
		if i == 1 && s.opts.heapProfiles != "" {
			save = filepath.Join(s.opts.heapProfiles, fmt.Sprintf("heap-%s-%d-watchlist-%s.pb.gz", scenario, seeded, onOff(watchList)))
		}
		if err := bench.FetchPprof(s.pprofAddr, "heap?gc=1", save); err != nil {
			s.res.Warnf("forcing a collection: %v", err)
		}
	}
	// The live heap: what is still allocated right after the collection.
	fams, err := bench.Scrape(st.MetricsRequest(bench.ProtoFormat()))
	if err != nil {
		return fmt.Errorf("reading steward's metrics: %w", err)
	}
	m.LiveHeap = int64(harness.SumFamilies(fams, "go_memstats_heap_alloc_bytes", nil))
	m.AuditSeconds = harness.SumFamilies(fams, "steward_audit_duration_seconds", nil)
	m.AuditFindings = harness.SumFamilies(fams, "steward_audit_results", nil)
	m.Cached = harness.SumFamilies(fams, "steward_claimguard_cached_objects", nil)
	m.Kinds = harness.SumFamilies(fams, "steward_claimguard_watched_kinds", nil) + float64(len(fams["steward_watched_kinds"].GetMetric()))
	mem, err := settledMemory(ctx, st.PID())
	if err != nil {
		return fmt.Errorf("reading steward's memory: %w", err)
	}
	m.SyncedRSS, m.PeakRSS = mem.RSS, mem.Peak
	if after, err := s.watches(ctx); err == nil && before >= 0 {
		m.Watches = after - before
	} else {
		m.Watches = math.NaN()
	}
	bench.Logf("%-6s WatchList %-3s %7d seeded, %7.0f in claimguard: ready in %6s (CPU %s), synced %s, start-up peak %s (%.2f×), peak once settled %s, live heap %s, %3.0f watches, %3.0f kinds",
		scenario, onOff(watchList), seeded, m.Cached, m.Startup.Round(100*time.Millisecond), m.StartupCPU.Round(10*time.Millisecond), bench.MiB(m.SyncedRSS), bench.MiB(m.ReadyPeakRSS), m.PeakRatio(), bench.MiB(m.PeakRSS), bench.MiB(m.LiveHeap), m.Watches, m.Kinds)
	s.res.Measures = append(s.res.Measures, m)
	return nil
}

// settledMemory polls a process's memory every second until its resident
// size has not fallen by more than 1% over the last 30 seconds (or three
// minutes have passed), and returns the last reading. The window is that
// long because Go's scavenger returns freed memory in bursts and then
// sleeps for up to 99 times what a burst took (it keeps to 1% of a CPU):
// with a window of ten seconds, a Steward whose scavenger had yet to
// return half of its resident memory counted as settled.
func settledMemory(ctx context.Context, pid int) (harness.Memory, error) {
	const window = 30
	var readings []harness.Memory
	for deadline := time.Now().Add(3 * time.Minute); ; bench.Sleep(ctx, time.Second) {
		mem, err := harness.ProcessMemory(pid)
		if err != nil {
			return mem, err
		}
		readings = append(readings, mem)
		n := len(readings)
		if n > window && float64(readings[n-1-window].RSS-mem.RSS) <= 0.01*float64(mem.RSS) || time.Now().After(deadline) || ctx.Err() != nil {
			return mem, nil
		}
	}
}

// sizedLimit is the memory limit an operator following the README's sizing
// gives Steward for n cached objects: 1 KiB each plus 64 MiB, never below
// the shipped limit. Measuring every size under the shipped limit would have
// Go's soft limit squeeze the collector at the larger sizes, and report that
// squeeze as a smaller cache.
func sizedLimit(shipped int64, n int) int64 {
	return max(shipped, int64(n)<<10+64<<20)
}

// watches counts the WATCH requests the API server is serving
// (apiserver_longrunning_requests{verb="WATCH"}); measured with and
// without Steward, the difference is the watches Steward holds.
func (s *scaler) watches(ctx context.Context) (float64, error) {
	fams, err := s.env.APIServerMetrics(ctx)
	if err != nil {
		return -1, err
	}
	if _, ok := fams["apiserver_longrunning_requests"]; !ok {
		return -1, fmt.Errorf("the API server does not report apiserver_longrunning_requests")
	}
	return harness.SumFamilies(fams, "apiserver_longrunning_requests", map[string]string{"verb": "WATCH"}), nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
