package serving

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Options are the settings Wrap applies around every rule.
type Options struct {
	// Mode is how the rule's denials take effect.
	Mode rule.Mode
	// ExemptUsers and ExemptGroups are identities whose requests a rule
	// never denies; they are allowed with a warning and an audit annotation.
	ExemptUsers  []string
	ExemptGroups []string
	// BreakGlassGroup members are allowed like exempt users, for emergencies.
	BreakGlassGroup string
	// Log receives one structured line per non-trivial decision.
	Log logr.Logger
	// Events, when set, records a Kubernetes Event for each denial of a
	// service account's write.
	Events *DenialEvents
	// Metrics records each decision; when nil, decisions are counted
	// nowhere.
	Metrics *Metrics
}

// Wrap returns the handler the server registers at one of a rule's webhook
// paths. It applies, in one place for all rules: request sanity checks,
// panic recovery, the webhook's failure policy for internal errors,
// exemptions and break-glass, the rule's mode, audit annotations, the
// decision log line and the decision counter.
func Wrap(r rule.Rule, wh rule.Webhook, opts Options) admission.Handler {
	spec := r.Spec()
	m := opts.Metrics
	if m == nil {
		m = NewMetrics()
	}
	return &wrapped{
		rule:      r,
		name:      spec.Name,
		failOpen:  spec.Type == rule.Mutating || wh.FailurePolicy == admissionregistrationv1.Ignore,
		opts:      opts,
		seconds:   m.seconds.WithLabelValues(spec.Name),
		decisions: m.decisions,
		events:    opts.Events.forRule(spec.Name),
	}
}

type wrapped struct {
	rule     rule.Rule
	name     string
	failOpen bool
	opts     Options
	// seconds is the rule's decision duration histogram, looked up once.
	seconds   prometheus.Observer
	decisions *prometheus.CounterVec
	// events records denials of service accounts (nil: none).
	events *ruleEvents
}

func (w *wrapped) Handle(ctx context.Context, ar admission.Request) (resp admission.Response) {
	start := time.Now()
	req := acquire(ar)
	defer func() {
		// The Request's Views are read up to the last line of the
		// decision (Events read the stored object's uid), and reused
		// once it is made.
		defer release(req)
		if p := recover(); p != nil {
			resp = w.finish(req, admission.Errored(http.StatusInternalServerError, fmt.Errorf("panic: %v", p)))
		}
		w.seconds.Observe(time.Since(start).Seconds())
	}()
	if err := checkRequest(req); err != nil {
		// No API server sends such a review, so whatever sent it gets a
		// refusal even where the failure policy would allow: an "allowed"
		// answer to a malformed review is never what a caller should see.
		w.decisions.WithLabelValues(w.name, string(Errored)).Inc()
		w.log(req, Errored, err.Error())
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("%s: %w", w.name, err))
	}
	return w.finish(req, w.rule.Handle(ctx, req))
}

// checkRequest refuses AdmissionReviews that carry no usable request, so no
// rule has to guard against an empty one.
func checkRequest(req *rule.Request) error {
	switch {
	case req.UID == "":
		return fmt.Errorf("AdmissionReview has no request (or the request has no uid)")
	case req.Operation == "":
		return fmt.Errorf("admission request %s has no operation", req.UID)
	case req.Kind.Kind == "":
		return fmt.Errorf("admission request %s has no kind", req.UID)
	}
	return nil
}

// finish turns the rule's verdict into the response the API server gets.
func (w *wrapped) finish(req *rule.Request, resp admission.Response) admission.Response {
	decision := classify(resp)
	verdict := message(resp)
	switch decision {
	case Errored:
		if w.failOpen {
			resp = admission.Allowed("").WithWarnings(fmt.Sprintf("%s could not check this request and allowed it: %s", w.name, verdict))
		} else {
			resp.Result.Message = fmt.Sprintf("%s could not check this request: %s", w.name, verdict)
		}
	case Denied:
		decision, resp = w.soften(req, verdict, resp)
		if decision == Denied {
			// Only a refusal that stands: softened ones were allowed.
			w.events.denied(req, verdict)
		}
	case Allowed, Warned:
		if w.opts.Mode == rule.Audit && (len(resp.Patches) > 0 || len(resp.Patch) > 0 || len(resp.Warnings) > 0) {
			// Audit mode has no visible effect on the request; the log
			// line and audit annotation record what would have happened.
			resp = admission.Allowed(verdict)
			decision = Audited
		}
	}
	if decision != Allowed || verdict != "" {
		resp = withAudit(resp, decision, verdict)
		w.log(req, decision, verdict)
	}
	w.decisions.WithLabelValues(w.name, string(decision)).Inc()
	return resp
}

// soften applies exemptions, break-glass and the rule's mode to a denial.
func (w *wrapped) soften(req *rule.Request, verdict string, denied admission.Response) (Decision, admission.Response) {
	user := req.UserInfo.Username
	switch {
	case slices.Contains(w.opts.ExemptUsers, user) || intersects(w.opts.ExemptGroups, req.UserInfo.Groups):
		resp := admission.Allowed(verdict).WithWarnings(fmt.Sprintf("%s: allowed because %s is exempt; without the exemption: %s", w.name, user, verdict))
		return Bypassed, withAnnotation(resp, "bypassed-by", user)
	case w.opts.BreakGlassGroup != "" && slices.Contains(req.UserInfo.Groups, w.opts.BreakGlassGroup):
		resp := admission.Allowed(verdict).WithWarnings(fmt.Sprintf("%s: break-glass by %s (group %s) recorded; without it: %s", w.name, user, w.opts.BreakGlassGroup, verdict))
		return Bypassed, withAnnotation(resp, "break-glass-by", user)
	case w.opts.Mode == rule.Warn:
		return Warned, admission.Allowed(verdict).WithWarnings(verdict)
	case w.opts.Mode == rule.Audit:
		return Audited, admission.Allowed(verdict)
	}
	return Denied, denied
}

// classify reads the outcome from a rule's response: controller-runtime's
// Denied carries 403, Errored carries the error's code.
func classify(resp admission.Response) Decision {
	switch {
	case !resp.Allowed && resp.Result != nil && resp.Result.Code != 0 && resp.Result.Code != http.StatusForbidden:
		return Errored
	case !resp.Allowed:
		return Denied
	case len(resp.Warnings) > 0:
		return Warned
	}
	return Allowed
}

func message(resp admission.Response) string {
	if resp.Result == nil {
		return ""
	}
	if resp.Result.Message != "" {
		return resp.Result.Message
	}
	return string(resp.Result.Reason)
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// withAudit records the decision in the audit log; the API server prefixes
// each key with the webhook's name.
func withAudit(resp admission.Response, d Decision, verdict string) admission.Response {
	resp = withAnnotation(resp, "decision", string(d))
	if verdict != "" {
		resp = withAnnotation(resp, "reason", verdict)
	}
	return resp
}

func withAnnotation(resp admission.Response, key, value string) admission.Response {
	if resp.AuditAnnotations == nil {
		resp.AuditAnnotations = map[string]string{}
	}
	resp.AuditAnnotations[key] = value
	return resp
}

func (w *wrapped) log(req *rule.Request, d Decision, verdict string) {
	level := 0
	if d == Allowed {
		level = 1
	}
	w.opts.Log.V(level).Info("admission decision",
		"rule", w.name,
		"user", req.UserInfo.Username,
		"groups", req.UserInfo.Groups,
		"operation", req.Operation,
		"kind", req.Kind.String(),
		"subResource", req.SubResource,
		"namespace", req.Namespace,
		"name", req.Name,
		"uid", req.UID,
		"dryRun", req.DryRun != nil && *req.DryRun,
		"decision", d,
		"reason", verdict,
	)
}

// requests holds Requests between calls, so that the Views' indexes keep
// the memory they grew into instead of allocating it for every request.
var requests = sync.Pool{New: func() any { return new(rule.Request) }}

// acquire returns a reused Request for req.
func acquire(req admission.Request) *rule.Request {
	r := requests.Get().(*rule.Request)
	r.Reset(req)
	return r
}

// release returns r to requests, holding nothing of its request.
func release(r *rule.Request) {
	r.Reset(admission.Request{})
	requests.Put(r)
}

// Judge asks r about req through a reused Request, as the server does
// (without Wrap's modes, exemptions and metrics): what a rule's own
// tests and benchmarks measure.
func Judge(ctx context.Context, r rule.Rule, req admission.Request) admission.Response {
	rr := acquire(req)
	defer release(rr)
	return r.Handle(ctx, rr)
}
