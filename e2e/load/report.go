package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// runInfo is what every report says of the run that wrote it: the
// machine and commit measured, the options, when, and what went wrong
// without ending the run.
type runInfo struct {
	Machine           machine
	Options           options
	Started, Finished time.Time
	Warnings          []string
}

func newRunInfo(ctx context.Context, opts options) runInfo {
	return runInfo{Machine: describeMachine(ctx), Options: opts, Started: time.Now()}
}

// warnf logs a warning and keeps it for the report.
func (r *runInfo) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	logf("warning: %s", msg)
	r.Warnings = append(r.Warnings, msg)
}

// generated says when and on what the run was made.
func (r *runInfo) generated() string {
	m := r.Machine
	return fmt.Sprintf("on %s at commit `%s`, on %d × %s", r.Started.UTC().Format("2006-01-02 15:04 MST"), m.Commit, m.CPUs, m.CPUModel)
}

// warningList is the run's warnings as a Markdown list, one line each.
func (r *runInfo) warningList() string {
	var b strings.Builder
	for _, msg := range r.Warnings {
		b.WriteString("- " + strings.NewReplacer("\n", " ", "|", `\|`).Replace(msg) + "\n")
	}
	return b.String()
}

// goalTable is the Markdown table of goals, what was measured and the
// verdict.
func goalTable(goals []goal) string {
	var b strings.Builder
	b.WriteString("| goal | measured | |\n|---|---|---|\n")
	for _, g := range goals {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", g.Goal, g.Measured, g.Verdict)
	}
	return b.String()
}

// writeDoc writes svg as chart beside the report at path, then the report
// render makes of the one it replaces ("" when there is none).
func writeDoc(path, chart, svg string, render func(old string) string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), chart), []byte(svg), 0o644); err != nil {
		return err
	}
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(path, []byte(render(string(old))), 0o644)
}

// results is everything a load run measured.
type results struct {
	runInfo
	Points       []*point
	Memory       memReport
	Seeded       *seedStep
	Profiles     []profile
	Webhooks     []string
	HandlerBench string
}

type machine struct {
	CPUs             int
	CPUModel, Commit string
}

// memReport is Steward's resident memory started and synced, the peaks
// (VmHWM) of each phase, and synced again with the large caches; and what
// claimguard held after the restart and at most before a cleanup.
type memReport struct {
	IdleRSS, PeakBeforeBurst, PeakSmall, CachedRSS, PeakLarge, SoftLimit int64
	CachedObjects, MostCachedObjects                                     float64
}

type profile struct{ Title, Path, Top string }

// firstOf is the first element of xs that matches, or nil.
func firstOf[T any](xs []*T, match func(*T) bool) *T {
	if i := slices.IndexFunc(xs, match); i >= 0 {
		return xs[i]
	}
	return nil
}

// find returns a workload's point under cfg with writers (not the burst).
func (r *results) find(wl string, cfg configID, writers int) *point {
	return firstOf(r.Points, func(p *point) bool { return p.Workload == wl && p.Config == cfg && p.Writers == writers && !p.Burst })
}

// level is the number of writers the goals are judged at: 16, or the most
// measured when 16 was not.
func (r *results) level() int {
	if c := r.Options.concurrency; !slices.Contains(c, 16) {
		return slices.Max(c)
	}
	return 16
}

// measured are the workloads with points, in run order.
func (r *results) measured() []*workload {
	var out []*workload
	for _, w := range workloads {
		if r.find(w.Name, cfgNone, r.Options.concurrency[0]) != nil {
			out = append(out, w)
		}
	}
	return out
}

// judged says whether the API server called Steward for (nearly) every
// write of a workload.
func (r *results) judged(wl string) bool {
	p := r.find(wl, cfgSteward, r.level())
	return p != nil && p.Answered() > 0 && p.Calls/float64(p.Answered()) >= 0.5
}

// fullCaches says whether the caches were seeded at the goals' scale.
func (r *results) fullCaches() bool {
	s := r.Seeded
	return s != nil && s.Total >= fullObjects
}

// Markers around the hand-written notes, which a new run keeps.
const (
	notesBegin = "<!-- notes:begin (kept when the report is regenerated) -->"
	notesEnd   = "<!-- notes:end -->"
)

// writeReport writes the chart and the report, keeping the notes of the
// report it replaces.
func writeReport(path string, res *results) error {
	const chart = "benchmark-latency.svg"
	logf("writing %s and %s", path, filepath.Join(filepath.Dir(path), chart))
	return writeDoc(path, chart, svgChart(chartPanels(res)), func(old string) string {
		notes := "\n_No notes yet._\n"
		if _, rest, ok := strings.Cut(old, notesBegin); ok {
			notes, _, _ = strings.Cut(rest, notesEnd)
		}
		return renderMarkdown(res, chart, notes, keptScale(old))
	})
}

// renderMarkdown is the report: the cache-at-scale section scale, kept
// from the report it replaces, then the load run's.
func renderMarkdown(res *results, chart, notes, scaleSection string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	o, n := res.Options, res.level()
	scale := fmt.Sprintf("%d round%s of %s per point at %s writers", o.rounds, plural(o.rounds), o.duration, joinInts(o.concurrency))
	if s := res.Seeded; s != nil {
		scale += fmt.Sprintf(", caches of %d XRs, %d MRs and %d Flux objects", s.XRs, s.MRs, s.Flux)
	}
	label := "full scale"
	if o.rounds < 7 || !res.fullCaches() {
		label = fmt.Sprintf("**reduced scale**, noisier than the full run (7 rounds, caches of %s)", fullMix)
	}
	var busy, secs float64 // the cores other processes kept busy, weighted by time
	for _, p := range res.Points {
		busy, secs = busy+p.OtherCores()*p.Elapsed.Seconds(), secs+p.Elapsed.Seconds()
	}
	w("# Benchmarks\n\n%s\n\n## Admission under load\n\nWhat admission costs the API server, measured by `make bench` (the load generator in [`e2e/load`](../e2e/load)) against a real kube-apiserver and etcd. Generated by that run %s, while other processes kept %.2f cores busy on average; %s: %s.\n\n",
		scaleSection, res.generated(), busy/max(secs, 1e-9), label, scale)

	w("## Summary\n\nEach goal is judged on the median of paired rounds (each round measures every configuration within seconds of the others); the range over the rounds is in brackets.\n\n%s", goalTable(evaluateGoals(res)))
	w("\nSteward's throughput at %d writers as a multiple of each other configuration's, median of the paired rounds (range):\n\n", n)
	w("| workload | Steward calls per write | ÷ no admission (a) | ÷ allow-all webhook, same certificates (c) | ÷ CEL policy (b) |\n|---|---:|---:|---:|---:|\n")
	for _, wl := range res.measured() {
		calls := ""
		if p := res.find(wl.Name, cfgSteward, n); p != nil && p.Answered() > 0 {
			calls = fmt.Sprintf("%.2f", p.Calls/float64(p.Answered()))
		}
		w("| %s | %s | %s | %s | %s |\n", wl.Short, calls, res.paired(wl.Name, cfgSteward, cfgNone, n), res.paired(wl.Name, cfgSteward, cfgAllowAll, n), res.paired(wl.Name, cfgSteward, cfgPolicy, n))
	}

	w("\n## Reproducing\n\n`make tools` once, then `make bench` (about an hour on two cores): the handler benchmarks (`go test -bench . -benchmem ./webhooks/...`), then `go run ./e2e/load` with its defaults, which rewrites this file (keeping the notes) and [the chart](%s). ", chart)
	w("A check of the tool in about ten minutes, labelled as reduced scale: `make bench BENCH_FLAGS=\"-rounds 2 -concurrency 1,16 -objects 1300 -burst-writers 100\"`. Other flags: `-duration`, `-warmup`, `-burst-duration`, `-workloads`, `-profile`, `-out`. `make bench-hostile` runs the hostile-load scenario (`-hostile`, in the notes); `make bench-scale` the cache-at-scale scenarios (`-scale`, the first section), and this run keeps that section as it is.\n\n")

	w("## Methodology\n\nOne invocation starts kube-apiserver and etcd through the e2e harness (`e2e/harness`), the real `steward` binary with every rule at its defaults and its Deployment's memory limit, and an allow-all webhook process. Each workload is measured at each number of writers under four configurations:\n\n")
	w("| | configuration |\n|---|---|\n| (a) | no admission webhooks: the API server's own floor |\n")
	w("| (b) | a ValidatingAdmissionPolicy with fleetguard's core decision in CEL (people may not change the labels, spec or data of objects labelled `objectset.rio.cattle.io/hash`), matched with fleetguard's own rules, selectors and match conditions |\n")
	w("| (c) | an allow-all controller-runtime webhook in its own process (TLS 1.2, HTTP/1.1, as Steward), registered as a copy of Steward's configurations (every entry's rules, selectors, match conditions, failure policy and timeout) pointed at it. Its CA and serving certificate come from the harness's generator, as Steward's do: an ECDSA P-256 key and a leaf-plus-CA chain for both, so a TLS handshake costs both the same |\n")
	w("| (d) | Steward, registered from `manifests/base/webhooks.yaml` plus the rules it fills in at run time: %s |\n\n", strings.Join(res.Webhooks, ", "))
	w("A point runs closed-loop writers (each sends its next write when the previous one is answered) for %s after a %s warm-up, in %d round%s; each round measures the four configurations in turn, alternating the direction (a b c d, then d c b a). ", o.duration, o.warmup, o.rounds, plural(o.rounds))
	w("Ratios are taken round by round and their median is reported with the range: a shared machine's speed drifts by a third over tens of seconds, so only measurements seconds apart compare like with like; the tables in the appendix sum the rounds. ")
	w("Writers impersonate the workload's user (the harness makes every authenticated user a cluster-admin, so only admission refuses); a write counts when it is answered as the configuration intends (stored, or refused by admission). CPU time comes from `/proc/<pid>/stat`; a webhook's CPU per call divides its process's CPU by the calls it served, so Steward's includes its informers. Steward's decision latency is its `steward_decision_duration_seconds` native histogram (buckets about 10%% wide; the upper bound is reported). ")
	if s := res.Seeded; s != nil {
		w("The Crossplane and Flux workloads run after seeding the mix of the cache-at-scale scenarios, %d XRs (one in %d terminating), %d MRs and %d Flux objects (some suspended), in %s and restarting Steward, so its caches hold them. ", s.XRs, terminatingEvery, s.MRs, s.Flux, s.Took.Round(time.Second))
	}
	w("The burst runs %d writers for %s. The API server writes a Metadata-level audit log in every configuration.\n\n", o.burstWriters, o.burstDuration)

	w("## Appendix\n\n### Notes\n\n%s%s%s\n\n", notesBegin, notes, notesEnd)
	w("### Raw runs\n\n![p50 latency at the fewest writers and throughput relative to (a), per workload and configuration](%s)\n\n", chart)
	w("Columns: writes answered per second, summed over the rounds, and as a multiple of (a); client latency (ms); p50 added to (a)'s; writes refused by admission, and errors; webhook calls per write and the webhook's CPU per call (ms); CPU per write of everything serving it (API server, etcd, the webhook; ms) and (a)'s divided by it; Steward's decision p99 (ms); cores busy with other processes.\n\n")
	for _, wl := range res.measured() {
		judged := "the API server never calls Steward for these writes"
		if res.judged(wl.Name) {
			judged = "Steward judges every write"
		}
		w("#### %s\n\n`%s`, %ss by `%s`; %s.\n\n", wl.Title, wl.Name, wl.Verb, wl.User, judged)
		writeTable(&b, func(cfg configID, n int) *point { return res.find(wl.Name, cfg, n) }, o.concurrency)
	}
	if firstOf(res.Points, func(p *point) bool { return p.Burst }) != nil {
		w("#### Burst: %d people edit Fleet-managed ConfigMaps at once\n\n", o.burstWriters)
		writeTable(&b, func(cfg configID, _ int) *point {
			return firstOf(res.Points, func(p *point) bool { return p.Burst && p.Config == cfg })
		}, []int{o.burstWriters})
	}
	mem := res.Memory
	w("### Steward's memory\n\nSoft memory limit, from the Deployment's memory limit: %s.\n\n| | resident |\n|---|---|\n", mib(mem.SoftLimit))
	w("| started, caches synced | %s |\n| peak, Fleet workloads before the burst | %s |\n| peak, with the burst | %s |\n", mib(mem.IdleRSS), mib(mem.PeakBeforeBurst), mib(mem.PeakSmall))
	if s := res.Seeded; s != nil {
		w("| restarted with the large caches, synced | %s |\n| peak, Crossplane and Flux workloads | %s |\n\n", mib(mem.CachedRSS), mib(mem.PeakLarge))
		w("%.0f resident bytes per seeded object; claimguard held %.0f objects after the restart and up to %.0f before a workload's cleanup (the MRs a workload creates stay cached until then).\n",
			float64(mem.CachedRSS-mem.IdleRSS)/float64(max(s.XRs+s.MRs+s.Flux, 1)), mem.CachedObjects, mem.MostCachedObjects)
	}
	if res.HandlerBench != "" {
		w("\n### Handler benchmarks\n\n`go test -run '^$' -bench . -benchmem ./webhooks/...`, run by `make bench` just before, on the same machine; `BenchmarkWrapAllowAll` is the floor, `serving.Wrap` around a rule that allows everything.\n\n```\n%s```\n", res.HandlerBench)
	}
	if len(res.Profiles) > 0 {
		w("\n### Profiles\n\nSteward's CPU during an extra, unmeasured run of each judged workload in (d), and its heap with the large caches; the files are in `%s`.\n\n", filepath.Dir(res.Profiles[0].Path))
		for _, p := range res.Profiles {
			top := slices.DeleteFunc(strings.Split(p.Top, "\n"), func(l string) bool { return strings.HasPrefix(l, "File: ") || strings.HasPrefix(l, "Build ID: ") })
			w("<details><summary>%s</summary>\n\n```\n%s```\n\n</details>\n\n", p.Title, strings.Join(top, "\n"))
		}
	}
	if len(res.Warnings) > 0 {
		w("\n### Warnings during the run\n\n%s", res.warningList())
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

func writeTable(b *strings.Builder, find func(configID, int) *point, levels []int) {
	b.WriteString("| | writers | writes/s | × (a) | p50 | p90 | p99 | +p50 | refused | errors | calls/write | webhook CPU/call | server CPU/write | × (a) by CPU | decision p99 | other load |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range levels {
		base := find(cfgNone, n)
		for _, cfg := range allConfigs {
			p := find(cfg, n)
			if p == nil {
				continue
			}
			var x, added, byCPU, calls string
			if base != nil && base.Rate() > 0 {
				x, added, byCPU = fmt.Sprintf("%.2f", p.Rate()/base.Rate()), fmt.Sprintf("%+.2f", ms(p.P50-base.P50)), fmtMs(base.ServerCPUPerWrite()/p.ServerCPUPerWrite())
			}
			if webhookProc[cfg] != "" && p.Answered() > 0 {
				calls = fmt.Sprintf("%.2f", p.Calls/float64(p.Answered()))
			}
			fmt.Fprintf(b, "| (%s) | %d | %.0f | %s | %.2f | %.2f | %.2f | %s | %d | %d | %s | %s | %s | %s | %s | %.2f |\n", cfg, n, p.Rate(), x, ms(p.P50), ms(p.P90), ms(p.P99),
				added, p.Denied, p.Failed, calls, fmtMs(p.CPUPerCall()), fmtMs(p.ServerCPUPerWrite()), byCPU, fmtMs(p.DecisionP99*1000), p.OtherCores())
		}
	}
	b.WriteString("\n")
}

// inRoot resolves a path relative to the repository root.
func inRoot(root, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

func joinInts(v []int) string {
	return strings.ReplaceAll(strings.Trim(fmt.Sprint(v), "[]"), " ", ", ")
}

// fmtMs prints milliseconds, empty when unknown or zero.
func fmtMs(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0) || v == 0:
		return ""
	case v < 0.1:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func mib(n int64) string {
	if n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// benchLines keeps the package and result lines of `go test -bench`.
func benchLines(out string) string {
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "pkg: ") || strings.HasPrefix(line, "Benchmark") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
