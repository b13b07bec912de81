package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/stewardhq/steward/bench"
)

// The goals Steward is measured against, and the scale of the caches they
// name.
const (
	agentCreateRatio, agentUpdateRatio, allowAllRatio = 0.85, 0.90, 0.95
	unmarkedRatio                                     = 0.97
	addedP50Create, addedP50Update                    = 0.6, 0.8 // ms
	webhookCPUPerCall, decisionP99                    = 0.3, 1.0 // ms
	rssSmall, rssLarge                                = 64 << 20, 150 << 20
)

// ratio is one configuration's rate over another's, round by round. Each
// round measures every configuration within seconds, while a shared
// machine's speed drifts by a third over tens of seconds, so each round's
// ratio compares two measurements taken under the same conditions; a goal
// is judged on the median, and the range is the spread.
type ratio struct{ median, lo, hi float64 }

func (r *results) paired(wl string, cfg, base configID, writers int) ratio {
	p, b := r.find(wl, cfg, writers), r.find(wl, base, writers)
	var rs []float64
	for i := 0; p != nil && b != nil && i < min(len(p.RoundRates), len(b.RoundRates)); i++ {
		if b.RoundRates[i] > 0 {
			rs = append(rs, p.RoundRates[i]/b.RoundRates[i])
		}
	}
	if len(rs) == 0 {
		return ratio{math.NaN(), math.NaN(), math.NaN()}
	}
	slices.Sort(rs)
	return ratio{bench.Median(rs), rs[0], rs[len(rs)-1]}
}

func (x ratio) String() string {
	switch {
	case math.IsNaN(x.median):
		return "–"
	case x.lo == x.hi:
		return fmt.Sprintf("%.2f×", x.median)
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f)", x.median, x.lo, x.hi)
}

// straddles notes when some ratio's rounds fall on both sides of a goal:
// one run cannot separate the two there.
func straddles(v string, xs []ratio, goal float64) string {
	for _, x := range xs {
		if x.lo < goal && x.hi >= goal {
			return v + " (rounds on both sides)"
		}
	}
	return v
}

// worstOf keeps the text of the worst case seen, by how far it is past its
// goal (larger is worse).
type worstOf struct {
	by   float64
	text string
}

func (w *worstOf) see(by float64, text string) {
	if w.text == "" || by > w.by {
		w.by, w.text = by, text
	}
}

func evaluateGoals(r *results) bench.Goals {
	var out bench.Goals
	n, fewest, add := r.level(), r.Options.concurrency[0], out.Add

	// Agent writes, and writes to objects no GitOps tool marks: the match
	// conditions (argocdguard's on every kind included) keep them from
	// Steward. The agent's are compared with the CEL policy (b) too.
	for _, group := range []struct {
		goal   string
		names  []string
		min    float64
		policy bool
	}{{fmt.Sprintf("Fleet agent creates, %d writers: ≥ %.2f× no admission (a), and ≥ the CEL policy (b)", n, agentCreateRatio),
		[]string{"fleet-configmap-create-agent"}, agentCreateRatio, true},
		{fmt.Sprintf("Fleet agent updates, %d writers: ≥ %.2f× no admission (a), and ≥ the CEL policy (b)", n, agentUpdateRatio),
			[]string{"fleet-configmap-update-agent", "fleet-deployment-update-agent"}, agentUpdateRatio, true},
		{fmt.Sprintf("Writes to objects no GitOps tool marks, %d writers: ≥ %.2f× no admission (a), and 0 Steward calls", n, unmarkedRatio),
			[]string{"plain-configmap-create-human", "plain-configmap-update-human"}, unmarkedRatio, false}} {
		var parts []string
		var spread []ratio
		ok := true
		for _, wl := range group.names {
			d, b, p := r.paired(wl, cfgSteward, cfgNone, n), r.paired(wl, cfgPolicy, cfgNone, n), r.find(wl, cfgSteward, n)
			if p == nil {
				continue
			}
			spread, ok = append(spread, d), ok && d.median >= group.min
			if group.policy {
				parts = append(parts, fmt.Sprintf("%s: Steward %s, policy %s; %.0f Steward calls", workloadNamed(wl).Short, d, b, p.Calls))
				ok = ok && d.median >= b.median
			} else {
				parts = append(parts, fmt.Sprintf("%s: Steward %s; %.0f Steward calls", workloadNamed(wl).Short, d, p.Calls))
				ok = ok && p.Calls == 0
			}
		}
		add(group.goal, strings.Join(parts, "; "), straddles(bench.Verdict(ok), spread, group.min))
	}

	// Writes Steward judges: the worst workload of each goal; the table
	// below the goals has them all.
	var spread []ratio
	var worst, added, cpu worstOf
	for _, w := range r.measured() {
		if !r.judged(w.Name) {
			continue
		}
		c := r.paired(w.Name, cfgSteward, cfgAllowAll, n)
		spread = append(spread, c)
		worst.see(-c.median, fmt.Sprintf("%s %s", w.Short, c))
		if d, a, c := r.find(w.Name, cfgSteward, 1), r.find(w.Name, cfgNone, 1), r.find(w.Name, cfgAllowAll, 1); d != nil && a != nil && c != nil {
			limit := map[string]float64{"create": addedP50Create, "update": addedP50Update}[w.Verb]
			added.see(ms(d.P50-a.P50)-limit, fmt.Sprintf("%s %+.2f ms (the allow-all adds %+.2f ms)", w.Short, ms(d.P50-a.P50), ms(c.P50-a.P50)))
		}
		if d, c := r.find(w.Name, cfgSteward, n), r.find(w.Name, cfgAllowAll, n); d != nil && c != nil {
			cpu.see(d.CPUPerCall()-webhookCPUPerCall, fmt.Sprintf("%s %.3f ms (the allow-all %.3f)", w.Short, d.CPUPerCall(), c.CPUPerCall()))
		}
	}
	add(fmt.Sprintf("Writes Steward judges, %d writers: ≥ %.2f× the allow-all webhook (c)", n, allowAllRatio),
		bench.When(worst.text != "", fmt.Sprintf("lowest of %d workloads: %s", len(spread), worst.text)), straddles(bench.Verdict(worst.by <= -allowAllRatio), spread, allowAllRatio))
	add(fmt.Sprintf("Writes Steward judges, 1 writer: p50 added to (a) ≤ %.1f ms (create) / %.1f ms (update)", addedP50Create, addedP50Update),
		bench.When(added.text != "", "largest: "+added.text), bench.Verdict(added.by <= 0))
	add(fmt.Sprintf("Steward's CPU per webhook call, %d writers: ≤ %.1f ms", n, webhookCPUPerCall), bench.When(cpu.text != "", "highest: "+cpu.text), bench.Verdict(cpu.by <= 0))

	burst := bench.FirstOf(r.Points, func(p *point) bool { return p.Burst && p.Config == cfgSteward })
	if burst == nil {
		burst = &point{}
	}
	add(fmt.Sprintf("Zero errors in the %d-writer burst with one Steward process", r.Options.burstWriters),
		bench.When(burst.Elapsed > 0, fmt.Sprintf("%d errors in %d writes, p99 %.0f ms", burst.Failed, burst.Answered()+burst.Failed, ms(burst.P99))), bench.Verdict(burst.Failed == 0))
	m, s := r.Memory, r.Seeded
	if s == nil {
		s = &bench.SeedStep{}
	}
	add("Steward's resident memory ≤ 64 MiB under load, without large caches",
		bench.When(m.PeakSmall > 0, fmt.Sprintf("peak %s with the burst (idle %s)", bench.MiB(m.PeakSmall), bench.MiB(m.IdleRSS))), bench.Verdict(m.PeakSmall <= rssSmall))
	large := fmt.Sprintf("peak %s with %d XRs, %d MRs, %d Flux objects", bench.MiB(m.PeakLarge), s.XRs, s.MRs, s.Flux)
	if !r.fullCaches() {
		// Extrapolating from small caches would add each object's cost,
		// dominated by noise at this scale, to a peak that already holds
		// the workloads' transient: a figure that says nothing.
		large += " (smaller caches than the goal names)"
	}
	add(fmt.Sprintf("Steward's resident memory ≤ 150 MiB with %s objects cached (%s)", bench.Kilo(bench.FullObjects), bench.FullMix),
		bench.When(m.PeakLarge > 0, large), bench.VerdictAt(r.fullCaches(), m.PeakLarge <= rssLarge))
	var parts []string
	ok := true
	for _, wl := range []string{"claim-create", "managed-create"} {
		// Judged at the fewest writers: with more, a decision mostly waits
		// for a core.
		if p := r.find(wl, cfgSteward, fewest); p != nil && p.DecisionP99 > 0 {
			parts = append(parts, fmt.Sprintf("%s %.3f ms", workloadNamed(wl).Short, p.DecisionP99*1000))
			ok = ok && p.DecisionP99*1000 < decisionP99
		}
	}
	add(fmt.Sprintf("Claim and MR decisions with the large caches, %d writer%s: p99 < %.0f ms", fewest, bench.Plural(fewest), decisionP99), strings.Join(parts, "; "), bench.Verdict(ok))
	return out
}
