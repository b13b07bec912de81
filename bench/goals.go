package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Goal is one row of a report's summary.
type Goal struct{ Goal, Measured, Verdict string }

// Goals are a report's summary.
type Goals []Goal

// Add appends a row; an empty measured says the goal's scenario did not
// run.
func (gs *Goals) Add(g, measured, Verdict string) {
	if measured == "" {
		measured, Verdict = "not run", "not measured"
	}
	*gs = append(*gs, Goal{g, measured, Verdict})
}

// Table is the Markdown table of goals, what was measured and the verdict.
func (gs Goals) Table() string {
	var b strings.Builder
	b.WriteString("| goal | measured | |\n|---|---|---|\n")
	for _, g := range gs {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", g.Goal, g.Measured, g.Verdict)
	}
	return b.String()
}

// When is text if measured is true and "" otherwise, so that Add says
// "not run".
func When(measured bool, text string) string {
	if !measured {
		return ""
	}
	return text
}

// VerdictAt is the verdict of a goal measured at its scale (full).
func VerdictAt(full, ok bool) string {
	if !full {
		return "not judged at this scale"
	}
	return Verdict(ok)
}

// Verdict is a goal met or missed.
func Verdict(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**missed**"
}

// Median of sorted xs.
func Median(xs []float64) float64 {
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

// FirstOf is the first element of xs that matches, or nil.
func FirstOf[T any](xs []*T, match func(*T) bool) *T {
	if i := slices.IndexFunc(xs, match); i >= 0 {
		return xs[i]
	}
	return nil
}

// JoinInts writes 1, 16, 64.
func JoinInts(v []int) string {
	return strings.ReplaceAll(strings.Trim(fmt.Sprint(v), "[]"), " ", ", ")
}

// ParseInts reads a flag's comma-separated positive numbers, as JoinInts
// writes them; with increasing, each must be larger than the one before.
// Errors name the flag.
func ParseInts(flag, list string, increasing bool) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		switch {
		case increasing && (err != nil || n < 1 || len(out) > 0 && n <= out[len(out)-1]):
			return nil, fmt.Errorf("-%s: %q is not a positive number larger than the one before", flag, s)
		case err != nil || n < 1:
			return nil, fmt.Errorf("-%s: %q is not a positive number", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// MiB writes a size in mebibytes, "n/a" when unknown (zero).
func MiB(n int64) string {
	if n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// Plural is "s" unless n is 1.
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Kilo writes an object count as 65k, 6k or 500.
func Kilo(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
