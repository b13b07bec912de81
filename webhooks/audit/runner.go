package audit

import (
	"context"
	"errors"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Timings of the runner.
const (
	// retryFirst is how soon a pass is repeated when a rule could not
	// answer (its caches were still syncing, as at start-up) or the
	// reports could not be written; the wait doubles each time, up to the
	// interval.
	retryFirst = 10 * time.Second
	// offPoll is how often a runner whose audit is off (interval 0) looks
	// whether a reloaded configuration turned it on.
	offPoll = 10 * time.Second
)

// Current returns the auditors of the rules being served and the audit
// interval in effect now (0: the audit is off): a configuration reload
// replaces both, and every pass asks again.
type Current func() (auditors []Auditor, every time.Duration)

// Runner is the background audit of `steward serve`: every interval it
// asks the auditing rules being served for their findings and publishes
// them. It is a manager Runnable that runs on every replica; with an
// Election, it audits only while its replica holds the Lease, so one
// replica writes the reports, and campaigns again whenever it loses it.
// It never stops the manager: the audit is optional, the webhooks are
// not.
type Runner struct {
	current   Current
	api       client.Reader
	publisher *Publisher
	metrics   *Metrics
	log       logr.Logger
	now       func() time.Time
	election  *Election

	// reports, when set, names the report APIs to write at each pass
	// (audit.reportAPIs, which a reload may change).
	reports func() []ReportAPI

	// notServed is set once the missing CRDs were logged, so they are
	// logged once, not every pass.
	notServed bool
}

// ReportTo makes each pass write the report APIs apis returns then.
func (r *Runner) ReportTo(apis func() []ReportAPI) *Runner {
	r.reports = apis
	return r
}

// NewRunner audits current's rules, reading through api and writing
// through publisher, counting in metrics. It audits unconditionally
// unless given an Election (Elect).
func NewRunner(current Current, api client.Reader, publisher *Publisher, metrics *Metrics, log logr.Logger) *Runner {
	return &Runner{current: current, api: api, publisher: publisher, metrics: metrics, log: log, now: time.Now}
}

// Elect makes the runner audit only while e elects its replica.
func (r *Runner) Elect(e *Election) *Runner {
	r.election = e
	return r
}

// NeedLeaderElection is false: the manager runs the runner on every
// replica, and the runner elects the one that audits itself, so losing
// the Lease never stops the manager and its webhook server.
func (r *Runner) NeedLeaderElection() bool { return false }

// Start audits until ctx ends: at once without an Election; with one,
// while this replica holds the Lease, campaigning again each time it
// loses it. It returns nil once ctx ended (and the Lease was released).
func (r *Runner) Start(ctx context.Context) error {
	if r.election == nil {
		r.lead(ctx)
		return nil
	}
	log := r.log.WithName("election")
	for ctx.Err() == nil {
		if r.election.campaign(ctx, log, r.lead) && ctx.Err() == nil {
			r.log.Info("lost the Lease "+LeaseName+": stopped auditing until this replica holds it again; webhooks are served as before", "identity", r.election.lock.Identity())
		}
	}
	return nil
}

// lead audits until ctx ends, with steward_audit_leader at 1 meanwhile.
func (r *Runner) lead(ctx context.Context) {
	if r.election != nil {
		r.log.Info("holding the Lease "+LeaseName+": auditing", "identity", r.election.lock.Identity())
	}
	r.metrics.setLeading(true)
	defer r.metrics.setLeading(false)
	r.audit(ctx)
}

// audit runs a pass at once, then every interval, until ctx ends.
func (r *Runner) audit(ctx context.Context) {
	retry := retryFirst
	for {
		auditors, every := r.current()
		wait := offPoll
		if every > 0 {
			wait = every
			if !r.Pass(ctx, auditors) {
				wait = min(retry, every)
				retry *= 2
			} else {
				retry = retryFirst
			}
			// A pass's garbage (the rules' findings, the reports read
			// and built) comes in one burst per interval into a heap
			// that is otherwise quiet: without a collection now it
			// stays resident until the next burst. One collection per
			// interval costs a few milliseconds of CPU.
			debug.FreeOSMemory()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Pass runs one audit and publishes it; it reports whether every rule
// answered and the reports were written.
func (r *Runner) Pass(ctx context.Context, auditors []Auditor) bool {
	pass := Collect(ctx, auditors, r.api)
	if ctx.Err() != nil {
		// Cut short: the Lease was lost, or Steward is stopping.
		return false
	}
	r.metrics.observe(pass, r.now())
	for _, a := range pass {
		if a.Err != nil {
			r.log.Info("a rule could not answer the audit; its previous results stand", "rule", a.Rule, "error", a.Err.Error())
		}
	}
	if r.reports != nil {
		r.publisher.APIs = r.reports()
	}
	done, err := r.publisher.Publish(ctx, pass.Answered(), pass.Failed())
	r.metrics.publishedResult(err == nil)
	switch {
	case errors.Is(err, ErrNotServed):
		if !r.notServed {
			r.notServed = true
			r.log.Info("the audit cannot publish its findings: "+err.Error()+"; install them (for PolicyReports manifests/policyreport-crds, or the chart's policyReportCRDs.install) and the next pass writes the reports. Metrics are kept meanwhile.",
				"reportAPIs", apiNames(r.publisher.APIs))
		}
		return false
	case err != nil && ctx.Err() != nil:
		return false
	case err != nil:
		r.log.Error(err, "writing the audit's reports; retrying at the next pass")
		return false
	}
	if r.notServed {
		r.notServed = false
		r.log.Info("report CRDs are served: the audit publishes its findings again", "reportAPIs", apiNames(r.publisher.APIs))
	}
	if done.Created+done.Updated+done.Deleted > 0 {
		r.log.Info("audit reports written", "created", done.Created, "updated", done.Updated, "deleted", done.Deleted, "unchanged", done.Unchanged)
	}
	return len(pass.Failed()) == 0
}

// apiNames names report APIs for the log.
func apiNames(apis []ReportAPI) []string {
	out := make([]string, len(apis))
	for i, a := range apis {
		out[i] = a.Name
	}
	return out
}
