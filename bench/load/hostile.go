package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/stewardhq/steward/bench"
	"github.com/stewardhq/steward/e2e/harness"
)

// unbounded is the --request-memory that switches the bound off in effect,
// the baseline the bounded Steward is compared with.
const unbounded = "--request-memory=1Ti"

// runHostile measures Steward under floods of unauthenticated reviews of
// 7 MiB sent straight to its webhook port (harness.RunHostileLoad) from 20,
// 50 and 100 clients, with its shipped bound on request memory and, in the
// same round right after, without it. Each flood hits a freshly started
// Steward, so its peak resident memory is its own. It prints a Markdown
// table and writes it to outPath.
func runHostile(ctx context.Context, rounds int, d time.Duration, outPath string) error {
	env, err := harness.Start(ctx)
	if err != nil {
		return fmt.Errorf("starting the API server: %w", err)
	}
	defer env.Stop()
	limit, err := harness.RenderedMemoryLimit()
	if err != nil {
		return err
	}
	clients := []int{20, 50, 100}
	runs := map[string][]harness.HostileLoad{} // by clients and bound
	for round := 1; round <= rounds; round++ {
		for _, n := range clients {
			for _, bound := range []string{"bounded", "unbounded"} {
				var args []string
				if bound == "unbounded" {
					args = []string{unbounded}
				}
				if _, err := env.RestartSteward(ctx, harness.DefaultConfig, args...); err != nil {
					return err
				}
				r, err := env.RunHostileLoad(ctx, n, 1000, d, 250*time.Millisecond)
				if err != nil {
					return err
				}
				bench.Logf("round %d, %d clients, %s: peak %s, answers %v, ordinary writes %d answered, %d failed", round, n, bound, bench.MiB(r.Peak), r.Flood.Statuses, r.Answered, r.Failed)
				key := fmt.Sprint(n, bound)
				runs[key] = append(runs[key], r)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Peak resident memory (VmHWM) of a freshly started Steward while N clients post unauthenticated AdmissionReviews of 7 MiB to `/validate/fleetguard`, one after another for %s, "+
		"and a person's write that Steward judges goes through the API server every 250 ms. Bounded: the shipped defaults (`--request-memory` 3/8 of the %.0f MiB limit); "+
		"unbounded: `%s`, measured right after in the same round. %d round%s; median, with the range.\n\n", d, float64(limit)/(1<<20), unbounded, rounds, bench.Plural(rounds))
	b.WriteString("| clients | peak, bounded | peak, unbounded | unbounded / bounded | within the limit | reviews refused 429, bounded | ordinary writes answered / failed, bounded | unbounded | slowest, bounded | unbounded |\n")
	b.WriteString("|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n")
	for _, n := range clients {
		bounded, unb := runs[fmt.Sprint(n, "bounded")], runs[fmt.Sprint(n, "unbounded")]
		bPeak, uPeak := peaks(bounded), peaks(unb)
		within := map[bool]string{true: "yes", false: "**no**"}[bPeak[len(bPeak)-1] <= float64(limit)]
		fmt.Fprintf(&b, "| %d | %s | %s | %.2f× | %s | %d of %d | %s | %s | %s | %s |\n", n, mibRange(bPeak), mibRange(uPeak), bench.Median(uPeak)/bench.Median(bPeak), within,
			total(bounded, func(r harness.HostileLoad) int { return r.Flood.Statuses[http.StatusTooManyRequests] }), total(bounded, func(r harness.HostileLoad) int { return r.Flood.Sent }),
			writes(bounded), writes(unb), slowest(bounded), slowest(unb))
	}
	fmt.Print(b.String())
	if err := os.MkdirAll(filepath.Dir(outPath), 0o755); err != nil {
		return err
	}
	return os.WriteFile(outPath, []byte(b.String()), 0o644)
}

// peaks are the rounds' peaks in bytes, sorted.
func peaks(rs []harness.HostileLoad) (out []float64) {
	for _, r := range rs {
		out = append(out, float64(r.Peak))
	}
	slices.Sort(out)
	return out
}

func mibRange(xs []float64) string {
	return fmt.Sprintf("%.0f MiB (%.0f–%.0f)", bench.Median(xs)/(1<<20), xs[0]/(1<<20), xs[len(xs)-1]/(1<<20))
}

func total(rs []harness.HostileLoad, f func(harness.HostileLoad) int) (n int) {
	for _, r := range rs {
		n += f(r)
	}
	return n
}

// writes are the ordinary writes answered and failed; slowest the longest.
func writes(rs []harness.HostileLoad) string {
	return fmt.Sprintf("%d / %d", total(rs, func(r harness.HostileLoad) int { return r.Answered }), total(rs, func(r harness.HostileLoad) int { return r.Failed }))
}

func slowest(rs []harness.HostileLoad) string {
	return slices.MaxFunc(rs, func(a, b harness.HostileLoad) int { return cmp.Compare(a.Slowest, b.Slowest) }).Slowest.Round(time.Millisecond).String()
}
