package ha

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"
)

// The steady load: writers each send one write after another, going
// through the kinds of writes in turn from a different start, pausing
// writerPause between writes so that two shared cores keep the API
// server's webhook calls well inside their timeouts.
const (
	writers      = 16
	writerPause  = 100 * time.Millisecond
	writeTimeout = 30 * time.Second
)

// record is one write's result.
type record struct {
	write      int
	start, end time.Time
	outcome    outcome
	err        string
}

// load runs the writers until stop.
type load struct {
	writes []write
	begun  time.Time
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	records []record
	marks   []mark
}

// mark is something a scenario did, for the failures' log.
type mark struct {
	at   time.Time
	what string
}

func startLoad(writes []write) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{writes: writes, begun: time.Now(), cancel: cancel}
	for i := range writers {
		l.wg.Go(func() {
			for n := i; ctx.Err() == nil; n++ {
				w := n % len(writes)
				wctx, done := context.WithTimeout(context.Background(), writeTimeout)
				start := time.Now()
				err := writes[w].do(wctx)
				end := time.Now()
				done()
				r := record{write: w, start: start, end: end, outcome: writes[w].judge(err)}
				if r.outcome != answered || writes[w].name == fluxDenial {
					r.err = fmt.Sprint(err)
				}
				l.mu.Lock()
				l.records = append(l.records, r)
				l.mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(writerPause):
				}
			}
		})
	}
	return l
}

// fluxDenial names the write whose denial shows the configuration in
// effect: its message names fluxguard's opt-out groups when there are any.
const fluxDenial = "fluxguard: hand edit"

// note records that the scenario did what at this moment.
func (l *load) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.marks = append(l.marks, mark{time.Now(), fmt.Sprintf(format, args...)})
}

// stop stops the writers and waits for the writes in flight.
func (l *load) stop() []record {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.records)
}

// row is one line of the summary.
type row struct {
	scenario   string
	round      int
	writes     int
	failed     int
	wrong      int
	viaSteward int
	note       string
}

// summary collects the rows of every scenario, in the order they ran.
var summary struct {
	mu   sync.Mutex
	rows []row
}

// finish stops the load, counts its writes into a row of the summary,
// logs every failed or wrong write against what the scenario did, and
// returns the records.
func (l *load) finish(t *testing.T, scenario string, round int, note string) []record {
	t.Helper()
	records := l.stop()
	r := row{scenario: scenario, round: round, writes: len(records), note: note}
	var bad []record
	for _, rec := range records {
		if l.writes[rec.write].viaSteward {
			r.viaSteward++
		}
		switch rec.outcome {
		case failed:
			r.failed++
			bad = append(bad, rec)
		case wrong:
			r.wrong++
			bad = append(bad, rec)
		}
	}
	summary.mu.Lock()
	summary.rows = append(summary.rows, r)
	summary.mu.Unlock()
	t.Logf("%s round %d: %d writes (%d through Steward) in %s, %d failed, %d wrong", scenario, round, r.writes, r.viaSteward, time.Since(l.begun).Round(100*time.Millisecond), r.failed, r.wrong)
	if len(bad) > 0 {
		t.Logf("what the scenario did, and the failed and wrong writes (times from the load's start):\n%s", l.timeline(bad, 40))
	}
	return records
}

// timeline interleaves the scenario's marks with at most n bad writes.
func (l *load) timeline(bad []record, n int) string {
	type line struct {
		at   time.Time
		text string
	}
	var lines []line
	l.mu.Lock()
	for _, m := range l.marks {
		lines = append(lines, line{m.at, "--- " + m.what})
	}
	l.mu.Unlock()
	for i, b := range bad {
		if i == n {
			lines = append(lines, line{b.start, fmt.Sprintf("... and %d more", len(bad)-n)})
			break
		}
		lines = append(lines, line{b.start, fmt.Sprintf("%s %s (took %s): %.300s%s", b.outcome, l.writes[b.write].name, b.end.Sub(b.start).Round(time.Millisecond), b.err, closedAround(b))})
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.at.Compare(b.at) })
	var sb strings.Builder
	for _, ln := range lines {
		fmt.Fprintf(&sb, "%8.3fs %s\n", ln.at.Sub(l.begun).Seconds(), ln.text)
	}
	return sb.String()
}

// logSummary logs the table of every round.
func logSummary(t *testing.T) {
	summary.mu.Lock()
	defer summary.mu.Unlock()
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tround\twrites\tvia Steward\tfailed\twrong\t\t")
	for _, r := range summary.rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\t%s\n", r.scenario, r.round, r.writes, r.viaSteward, r.failed, r.wrong, r.note)
	}
	tw.Flush()
	slowestExit.Lock()
	fmt.Fprintf(&sb, "replicas %d, --shutdown-delay %s, --shutdown-timeout %s, terminationGracePeriodSeconds %s; slowest exit after SIGTERM %s; %d connections closed unused over %d drains\n",
		replicaCount, shutdown.Delay, shutdown.Timeout, shutdown.GracePeriod, slowestExit.d.Round(10*time.Millisecond), slowestExit.closedUnused, slowestExit.drains)
	slowestExit.Unlock()
	t.Logf("summary:\n%s", sb.String())
}

// countBad returns how many records failed and how many were wrong.
func countBad(records []record) (failedN, wrongN int) {
	for _, r := range records {
		switch r.outcome {
		case failed:
			failedN++
		case wrong:
			wrongN++
		}
	}
	return failedN, wrongN
}

// closedAround names the connections a replica closed while the write was
// under way: the one it was sent on, when a replica closed it under it.
func closedAround(r record) string {
	var out []string
	for _, c := range replicas.Spreader.ConnectionLog() {
		if c.BackendClosedFirst && !c.Closed.Before(r.start.Add(-50*time.Millisecond)) && !c.Closed.After(r.end.Add(50*time.Millisecond)) {
			out = append(out, fmt.Sprintf("%s closed a connection it had been sent %d bytes on and answered %d, %s after it opened", c.Backend, c.FromClient, c.FromBackend, c.Closed.Sub(c.Opened).Round(time.Millisecond)))
		}
	}
	if len(out) == 0 {
		return ""
	}
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("and %d more", len(out)-3))
	}
	return "\n           (" + strings.Join(out, "; ") + ")"
}
