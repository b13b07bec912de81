package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stewardhq/steward/bench"
	"github.com/stewardhq/steward/webhooks/config"
)

// The goals of the cache-at-scale scenarios.
const (
	rssPerObjectGoal, heapPerObjectGoal = 512, 256 // bytes per cached object
	largestScaleGoal                    = 300 << 20
	peakRatioGoal                       = 1.25
	fleetWorkloadGoal                   = 1024     // resident bytes per Fleet-managed workload
	mrKindsGoal                         = 64 << 20 // bytes for fullMRKinds kinds
	// auditRSSGoal is the resident memory the background audit may add,
	// as a fraction; a pass must take at most auditPassGoal of the
	// default interval.
	auditRSSGoal, auditPassGoal = 0.10, 0.10
)

// scaleResults is everything a cache-at-scale run measured.
type scaleResults struct {
	bench.Run
	Options options
	// Limit is Steward's memory limit (the Deployment's).
	Limit    int64
	Measures []*scaleMeasure
	Seeding  []bench.SeedStep
}

// scaleMeasure is one start of Steward: the scenario (empty, mix, fleet,
// kinds), whether client-go's WatchList was on, the objects seeded for the
// scenario, and what was read once Steward had synced and settled.
type scaleMeasure struct {
	Scenario  string
	WatchList bool
	Seeded    int
	// Cached is steward_claimguard_cached_objects (XRs and MRs); Kinds
	// the informers Steward reports (steward_claimguard_watched_kinds
	// plus the series of steward_watched_kinds); Watches the WATCH
	// requests the API server served for Steward (NaN when unknown).
	Cached, Kinds, Watches float64
	// PeakRSS is VmHWM once settled; ReadyPeakRSS VmHWM at the end of
	// the start-up: the first ready answer, or, when claimguard answered
	// ready before its lists were stored (its one-minute bound), the
	// moment they were, FilledAfterReady later.
	SyncedRSS, PeakRSS, ReadyPeakRSS, LiveHeap int64
	Startup                                    time.Duration
	// StartupCPU is the CPU time Steward used until its first ready
	// answer; Limit the memory limit it ran with ($MEMORY_LIMIT).
	StartupCPU       time.Duration
	Limit            int64
	FilledAfterReady time.Duration
	// AuditSeconds is the sum over the rules of how long their last audit
	// took (steward_audit_duration_seconds); AuditFindings the findings
	// they last reported (steward_audit_results).
	AuditSeconds, AuditFindings float64
}

// PeakRatio is the start-up peak (VmHWM at the first ready answer) over
// the synced resident memory.
func (m *scaleMeasure) PeakRatio() float64 {
	if m.SyncedRSS == 0 {
		return math.NaN()
	}
	return float64(m.ReadyPeakRSS) / float64(m.SyncedRSS)
}

func (r *scaleResults) find(scenario string, watchList bool) *scaleMeasure {
	return bench.FirstOf(r.Measures, func(m *scaleMeasure) bool { return m.Scenario == scenario && m.WatchList == watchList })
}

// mix are the measurements of the Crossplane and Flux mix, by size.
func (r *scaleResults) mix(watchList bool) []*scaleMeasure {
	var out []*scaleMeasure
	for _, m := range r.Measures {
		if m.Scenario == scenarioMix && m.WatchList == watchList {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *scaleMeasure) int { return a.Seeded - b.Seeded })
	return out
}

// atLeast is the smallest mix measurement with at least n objects.
func (r *scaleResults) atLeast(n int, watchList bool) *scaleMeasure {
	return bench.FirstOf(r.mix(watchList), func(m *scaleMeasure) bool { return m.Seeded >= n })
}

// fullScale says whether every scenario ran at the goals' scale.
func (r *scaleResults) fullScale() bool {
	for _, n := range fullScaleSizes {
		if !slices.Contains(r.Options.scaleSizes, n) {
			return false
		}
	}
	return r.Options.mrKinds >= fullMRKinds && r.Options.fleetWorkloads >= fullFleetWorkloads
}

// fit is the least-squares line through (x, y): NaN without two distinct x.
func fit(xs, ys []float64) (slope, intercept float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if len(xs) < 2 || d <= 1e-9*max(sxx, 1) {
		return math.NaN(), math.NaN()
	}
	slope = (n*sxy - sx*sy) / d
	return slope, (sy - slope*sx) / n
}

// perObject fits a figure of the mix against the objects seeded.
func (r *scaleResults) perObject(watchList bool, figure func(*scaleMeasure) int64) (slope, intercept float64) {
	var xs, ys []float64
	for _, m := range r.mix(watchList) {
		xs, ys = append(xs, float64(m.Seeded)), append(ys, float64(figure(m)))
	}
	return fit(xs, ys)
}

func syncedRSS(m *scaleMeasure) int64 { return m.SyncedRSS }
func liveHeap(m *scaleMeasure) int64  { return m.LiveHeap }

func bytesPer(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.0f B", v)
}

func scaleGoals(r *scaleResults) bench.Goals {
	var out bench.Goals
	add := out.Add
	var sizes []string
	for _, m := range r.mix(true) {
		sizes = append(sizes, bench.Kilo(m.Seeded))
	}
	for _, g := range []struct {
		what   string
		figure func(*scaleMeasure) int64
		limit  float64
	}{{"resident memory (synced)", syncedRSS, rssPerObjectGoal}, {"live heap", liveHeap, heapPerObjectGoal}} {
		on, _ := r.perObject(true, g.figure)
		off, _ := r.perObject(false, g.figure)
		measured, v := fmt.Sprintf("WatchList on %s, off %s (least-squares slope over %s objects)", bytesPer(on), bytesPer(off), strings.Join(sizes, ", ")), bench.Verdict(on <= g.limit && off <= g.limit)
		if math.IsNaN(on) || math.IsNaN(off) {
			measured, v = "not run (needs two sizes of the mix)", "not measured"
		}
		add(fmt.Sprintf("Steward's %s per cached object ≤ %.0f B", g.what, g.limit), measured, v)
	}

	largest := fullScaleSizes[len(fullScaleSizes)-1]
	on, off := r.atLeast(largest, true), r.atLeast(largest, false)
	measured := "not run"
	if on != nil && off != nil {
		measured = fmt.Sprintf("WatchList on %s, off %s (synced)", bench.MiB(on.SyncedRSS), bench.MiB(off.SyncedRSS))
	} else if sOn, iOn := r.perObject(true, syncedRSS); !math.IsNaN(sOn) {
		if sOff, iOff := r.perObject(false, syncedRSS); !math.IsNaN(sOff) {
			measured = fmt.Sprintf("not run; the fit over %s objects predicts WatchList on %s, off %s", strings.Join(sizes, ", "), bench.MiB(int64(iOn+sOn*float64(largest))), bench.MiB(int64(iOff+sOff*float64(largest))))
		}
	}
	add(fmt.Sprintf("Resident memory with %s objects cached ≤ %s", bench.Kilo(largest), bench.MiB(largestScaleGoal)), measured,
		bench.VerdictAt(on != nil && off != nil, on != nil && off != nil && on.SyncedRSS <= largestScaleGoal && off.SyncedRSS <= largestScaleGoal))

	var parts []string
	ok := true
	for _, wl := range []bool{true, false} {
		if ms := r.mix(wl); len(ms) > 0 {
			worst := slices.MaxFunc(ms, func(a, b *scaleMeasure) int { return cmp.Compare(a.PeakRatio(), b.PeakRatio()) })
			parts = append(parts, fmt.Sprintf("WatchList %s %.2f× (at %s objects)", onOff(wl), worst.PeakRatio(), bench.Kilo(worst.Seeded)))
			ok = ok && worst.PeakRatio() <= peakRatioGoal
		}
	}
	add(fmt.Sprintf("Start-up peak (VmHWM) ≤ %.2f× the synced resident memory, WatchList on and off", peakRatioGoal),
		bench.When(len(parts) > 0, "highest: "+strings.Join(parts, "; ")), bench.Verdict(ok))

	if g := startupGCGoal(r); g != nil {
		out = append(out, *g)
	}

	first := fullScaleSizes[0]
	g := fmt.Sprintf("With %s objects cached and WatchList off, Steward starts inside its %s limit", bench.Kilo(first), bench.MiB(r.Limit))
	if m := r.atLeast(first, false); m != nil {
		add(g, fmt.Sprintf("peak %s with %s objects (%s at the first ready answer)", bench.MiB(m.PeakRSS), bench.Kilo(m.Seeded), bench.MiB(m.ReadyPeakRSS)), bench.Verdict(m.PeakRSS <= r.Limit))
	} else if ms := r.mix(false); len(ms) > 0 {
		m := ms[len(ms)-1]
		add(g, fmt.Sprintf("not run; peak %s with %s objects", bench.MiB(m.PeakRSS), bench.Kilo(m.Seeded)), "not judged at this scale")
	} else {
		add(g, "", "")
	}

	base, measured, v := r.find(scenarioEmpty, true), "", ""
	if f := r.find(scenarioFleet, true); f != nil && base != nil && f.Seeded > 0 {
		heap, rss := float64(f.LiveHeap-base.LiveHeap)/float64(f.Seeded), float64(f.SyncedRSS-base.SyncedRSS)/float64(f.Seeded)
		// Judged resident: what the process holds is what a memory limit
		// counts, the heap's collector and allocator overhead included.
		measured, v = fmt.Sprintf("%s resident each over %d Deployments (live heap: %s each)", bytesPer(rss), f.Seeded, bytesPer(heap)), bench.Verdict(rss <= fleetWorkloadGoal)
	}
	add(fmt.Sprintf("≤ %s resident per Fleet-managed workload (fleetguard's cache)", "1 KiB"), measured, v)

	measured, v = "", ""
	if on, off := r.find(scenarioAuditOn, true), r.find(scenarioAuditOff, true); on != nil && off != nil && off.SyncedRSS > 0 {
		added := float64(on.SyncedRSS-off.SyncedRSS) / float64(off.SyncedRSS)
		measured = fmt.Sprintf("with %s objects, auditing every %s: %s resident against %s with the audit off (%+.1f %%), live heap %+.1f MiB; a pass takes %.2f s summed over the rules, %.0f findings published", bench.Kilo(on.Seeded), auditEvery, bench.MiB(on.SyncedRSS), bench.MiB(off.SyncedRSS), added*100,
			float64(on.LiveHeap-off.LiveHeap)/(1<<20), on.AuditSeconds, on.AuditFindings)
		v = bench.VerdictAt(on.Seeded >= fullScaleSizes[0], added <= auditRSSGoal && on.AuditSeconds <= auditPassGoal*config.DefaultAuditInterval.Seconds())
	}
	add(fmt.Sprintf("The background audit adds ≤ %.0f %% resident memory at %s objects, and a pass takes ≤ %.0f %% of the default interval (%s)", auditRSSGoal*100, bench.Kilo(fullScaleSizes[0]), auditPassGoal*100, config.DefaultAuditInterval), measured, v)

	measured, v = "", ""
	if k, kinds := r.find(scenarioKinds, true), r.Options.mrKinds; k != nil && base != nil && kinds > 0 {
		added := k.SyncedRSS - base.SyncedRSS
		measured = fmt.Sprintf("%d kinds (%d objects each) add %s resident, %s live heap, %.0f watches", kinds, r.Options.objectsPerKind, bench.MiB(added), bench.MiB(k.LiveHeap-base.LiveHeap), k.Watches-base.Watches)
		if kinds < fullMRKinds {
			measured += fmt.Sprintf("; %d kinds at that rate would add %s", fullMRKinds, bench.MiB(added*fullMRKinds/int64(kinds)))
		}
		v = bench.VerdictAt(kinds >= fullMRKinds, added <= mrKindsGoal)
	}
	add(fmt.Sprintf("%d MR kinds with few objects add ≤ %s", fullMRKinds, bench.MiB(mrKindsGoal)), measured, v)
	return out
}

// scenarioTitle names a measurement in the table.
func (r *scaleResults) scenarioTitle(m *scaleMeasure) string {
	switch m.Scenario {
	case scenarioEmpty:
		return "empty caches"
	case scenarioKinds:
		return fmt.Sprintf("%d MR kinds, %d objects each", r.Options.mrKinds, r.Options.objectsPerKind)
	case scenarioFleet:
		return fmt.Sprintf("%d Fleet-managed Deployments", m.Seeded)
	case scenarioAuditOff:
		return fmt.Sprintf("%s objects, background audit off", bench.Kilo(m.Seeded))
	case scenarioAuditOn:
		return fmt.Sprintf("%s objects, background audit every %s", bench.Kilo(m.Seeded), auditEvery)
	case scenarioGC100:
		return fmt.Sprintf("%s objects, GOGC=100 while starting", bench.Kilo(m.Seeded))
	}
	return fmt.Sprintf("%s objects: XRs, MRs, Flux", bench.Kilo(m.Seeded))
}

// writeScaleReport writes the memory chart and the report's cache-at-scale
// section.
func writeScaleReport(path string, res *scaleResults) error {
	const chart = "benchmark-memory.svg"
	return bench.WriteSection(path, "scale", chart, memoryChart(res), renderScale(res, chart))
}

// renderScale is the report's cache-at-scale section.
func renderScale(res *scaleResults, chart string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	label := "full scale"
	if !res.fullScale() {
		var full []string
		for _, n := range fullScaleSizes {
			full = append(full, bench.Kilo(n))
		}
		label = fmt.Sprintf("**reduced scale** (the goals name %s objects, %d MR kinds and %d Fleet-managed workloads)", strings.Join(full, ", "), fullMRKinds, fullFleetWorkloads)
	}
	w("## Caches at scale\n\n")
	w("Steward's memory, start-up and watches with large caches, measured by `make bench-scale` (`go run ./bench/scale`) against a real kube-apiserver and etcd, separately from the load run below. Generated %s; %s.\n\n%s",
		res.Generated(), label, scaleGoals(res).Table())
	w("\n| scenario | WatchList | objects seeded | in claimguard's caches | memory limit | synced resident | start-up peak | peak ÷ synced | peak once settled | live heap | ready after | CPU until ready | watches | kinds watched |\n")
	w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range res.Measures {
		watches := "–"
		if !math.IsNaN(x.Watches) {
			watches = fmt.Sprintf("%.0f", x.Watches)
		}
		filled := ""
		if x.FilledAfterReady > 0 {
			filled = fmt.Sprintf(" † (%s after ready)", x.FilledAfterReady.Round(time.Second))
		}
		w("| %s | %s | %d | %.0f | %s | %s | %s%s | %.2f× | %s | %s | %s | %s | %s | %.0f |\n", res.scenarioTitle(x), onOff(x.WatchList), x.Seeded, x.Cached,
			bench.MiB(x.Limit), bench.MiB(x.SyncedRSS), bench.MiB(x.ReadyPeakRSS), filled, x.PeakRatio(), bench.MiB(x.PeakRSS), bench.MiB(x.LiveHeap), x.Startup.Round(100*time.Millisecond), x.StartupCPU.Round(10*time.Millisecond), watches, x.Kinds)
	}
	w("\n| WatchList | resident per object | live heap per object | resident at no objects (fit) | live heap at no objects (fit) |\n|---|---:|---:|---:|---:|\n")
	for _, wl := range []bool{true, false} {
		sr, ir := res.perObject(wl, syncedRSS)
		sh, ih := res.perObject(wl, liveHeap)
		w("| %s | %s | %s | %s | %s |\n", onOff(wl), bytesPer(sr), bytesPer(sh), fitMiB(ir), fitMiB(ih))
	}
	w("\n![Steward's resident memory against the objects cached, WatchList on and off](%s)\n\n", chart)

	w("How: one API server and etcd (the e2e harness) are filled step by step and Steward (every rule at its defaults; `$MEMORY_LIMIT` the Deployment's limit, or where larger what the README's sizing gives for the objects seeded, 1 KiB each plus 64 MiB, as an operator would set it: the memory limit column) is started afresh for each measurement, once with client-go's defaults (WatchList on: informers start with a streaming watch) and once with `%s` (a paginated LIST, then WATCH). ", watchListOff)
	w("The mix is 1 XR : 5 MRs : ½ Flux object: v1 XPostgreSQLInstances (the sample XRD in `e2e/crds`) of claims, each composing five MRs of real provider-sql v0.16.0 kinds (a Database, a Role, a Schema and two Grants, owned by the XR, labelled with its claim and carrying an external name and the provider's finalizer; one XR in %d is being deleted in the foreground with its MRs), and Kustomizations, HelmReleases and GitRepositories (a quarter suspended). ", bench.TerminatingEvery)
	w("The Fleet scenario's Deployments carry what Fleet's agent writes: Helm's labels and release annotations, wrangler's objectset id, owner and hash, `objectset.rio.cattle.io/applied` (the object gzipped, in base64), and managedFields of the `fleetagent` field manager and of `kube-controller-manager` (status); its cost is the difference from empty caches. ")
	w("The MR kinds are generated: copies of provider-sql's Database CRD renamed (kind DatabaseNNN, group kNNN.scale.sql.crossplane.io), in the `managed` category, each with a few composed objects; they and the Deployments are removed before the mix is seeded. ")
	w("Seeding writes straight to the API server from %d goroutines while Steward is stopped and its webhooks unregistered", res.Options.seedWorkers)
	for i, s := range res.Seeding {
		from := 0
		if i > 0 {
			from = res.Seeding[i-1].Total
		}
		sep := map[bool]string{true: ": ", false: ", "}[i == 0]
		w("%s%s to %s objects in %s (%.0f objects/s)", sep, bench.Kilo(from), bench.Kilo(s.Total), s.Took.Round(time.Second), s.Rate())
	}
	w(". ")
	w("Settled means: %s after /readyz first answers and claimguard reports the objects, the tool triggers two of the collections Go's runtime forces on an idle process every two minutes (pprof's `heap?gc=1`; the scavenger's goal after a collection follows the heap of the one before, so after the first it still allows for the start-up's), reads the live heap (`go_memstats_heap_alloc_bytes`) right after them, and reads the synced resident memory (VmRSS) once the runtime has returned what that freed (it has not fallen by 1%% in 30 seconds: Go's scavenger returns memory in bursts, seconds apart); the start-up peak is VmHWM read when Steward first answers ready and claimguard holds every seeded XR and MR (claimguard answers ready after one minute even while its lists are still being stored; the start-up then ends, and its peak is read, when they are: a dagger marks those), and the peak once settled VmHWM read with the synced memory: it adds what ran after start-up (the first audit pass, the collections the tool triggers) and the heap Go's collector allows once Steward is ready (twice the live heap at Go's default GOGC=100, where the synced memory is read after the runtime returned what it could), all from `/proc/<pid>/status`. Ready after is from the process's start to its first ready answer, and CPU until ready the process's user and system time then (`/proc/<pid>/stat`). ", res.Options.settle)
	w("The PolicyReport CRDs Steward ships are installed, so the background audit publishes as it would in a cluster that has them (every 5m, the default, in every measurement but two); at %s objects Steward is started twice more, with the audit off and with it every %s, and the goal compares the two: a pass's time is `steward_audit_duration_seconds` summed over the rules, read after at least two passes. ", bench.Kilo(auditScale(res.Options.scaleSizes)), auditEvery)
	w("Watches are the API server's own count, `apiserver_longrunning_requests{verb=\"WATCH\"}` with Steward running minus without it; kinds watched are Steward's (`steward_claimguard_watched_kinds` plus the series of `steward_watched_kinds`; fleetguard's four workload informers are not among them). Objects seeded count what the scenario created; claimguard's caches hold the XRs and MRs of them (`steward_claimguard_cached_objects`); suspendnotice's Flux objects have no count of their own.\n\n")
	w("Reproducing: `make tools` once, then `make bench-scale` for the full run")
	if n := len(res.Seeding); n > 0 {
		largest := fullScaleSizes[len(fullScaleSizes)-1]
		w(" (at this run's last seeding rate, seeding %s objects takes about %s; this run took %s in all)", bench.Kilo(largest),
			(time.Duration(float64(largest)/res.Seeding[n-1].Rate()) * time.Second).Round(time.Minute), res.Finished.Sub(res.Started).Round(time.Minute))
	}
	w(", or a check of the tool in about ten minutes, labelled as reduced scale: `make bench-scale BENCH_FLAGS=\"-scale-objects 6000,12000 -mr-kinds 50 -fleet-workloads 200\"`. Flags: `-scale-objects`, `-mr-kinds`, `-objects-per-kind`, `-fleet-workloads`, `-seed-workers`, `-settle`, `-out`. `make bench` leaves this section as it is.\n")
	if len(res.Warnings) > 0 {
		w("\nWarnings during the run:\n\n%s", res.WarningList())
	}
	return b.String()
}

func fitMiB(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", v/(1<<20))
}

// startupGCGoal compares the mix started as Steward starts (a low GOGC
// until ready) with the same mix started at GOGC=100, WatchList on and off: the
// CPU that costs and the peak it saves. Nil when not run.
func startupGCGoal(r *scaleResults) *bench.Goal {
	var parts []string
	for _, gc := range r.Measures {
		if gc.Scenario != scenarioGC100 || gc.StartupCPU <= 0 {
			continue
		}
		wl := gc.WatchList
		for _, m := range r.mix(wl) {
			if m.Seeded != gc.Seeded {
				continue
			}
			parts = append(parts, fmt.Sprintf("WatchList %s, %s objects: CPU until ready %s against %s at GOGC=100 (%+.0f %%), start-up peak %.2f× against %.2f× the synced memory",
				onOff(wl), bench.Kilo(m.Seeded), m.StartupCPU.Round(10*time.Millisecond), gc.StartupCPU.Round(10*time.Millisecond),
				100*(float64(m.StartupCPU)/float64(gc.StartupCPU)-1), m.PeakRatio(), gc.PeakRatio()))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return &bench.Goal{Goal: "Steward collects harder (a lower GOGC, and a cap on the heap's growth between collections once the live heap is large) until it is ready and no informer is listing: what that costs in CPU against Go's default GOGC=100, measured in the same run", Measured: strings.Join(parts, "; "), Verdict: "cost shown"}
}

// memoryChart plots Steward's synced resident memory, start-up peak and
// live heap (MiB) against the objects of the mix seeded, WatchList on and
// off, from empty caches to the largest size, with the memory limit and
// the largest size's goal.
func memoryChart(res *scaleResults) string {
	var lines []bench.Line
	rss := map[bool]string{true: "#59a14f", false: "#e15759"}
	for _, s := range []struct {
		name   string
		figure func(*scaleMeasure) int64
		dashed bool
		colors map[bool]string // WatchList on and off
	}{{"synced resident", syncedRSS, false, rss}, {"start-up peak", func(m *scaleMeasure) int64 { return m.ReadyPeakRSS }, true, rss},
		{"live heap", liveHeap, false, map[bool]string{true: "#4e79a7", false: "#f28e2b"}}} {
		for _, wl := range []bool{true, false} {
			l := bench.Line{Name: fmt.Sprintf("%s, WatchList %s", s.name, onOff(wl)), Dashed: s.dashed, Color: s.colors[wl]}
			points := res.mix(wl)
			if base := res.find(scenarioEmpty, wl); base != nil {
				points = append([]*scaleMeasure{base}, points...)
			}
			for _, m := range points {
				l.X, l.Y = append(l.X, float64(m.Seeded)), append(l.Y, float64(s.figure(m))/(1<<20))
			}
			lines = append(lines, l)
		}
	}
	refs := []bench.RefLine{{Label: fmt.Sprintf("memory limit %s", bench.MiB(res.Limit)), Y: float64(res.Limit) / (1 << 20)},
		{Label: fmt.Sprintf("goal at %s objects: %s", bench.Kilo(fullScaleSizes[len(fullScaleSizes)-1]), bench.MiB(largestScaleGoal)), Y: largestScaleGoal / (1 << 20)}}
	return bench.LineChart("Steward's memory against the objects cached (XRs, MRs, Flux objects)", "objects seeded", "MiB", lines, refs)
}
