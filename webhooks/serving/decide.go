package serving

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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

// wrap returns the handler the table serves at one of a rule's webhook
// paths. It applies, in one place for all rules: request sanity checks,
// panic recovery, the webhook's failure policy for internal errors,
// exemptions and break-glass, the rule's mode, audit annotations, the
// decision log line and the decision counter.
func wrap(r rule.Rule, wh rule.Webhook, opts Options) *wrapped {
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

// Handle judges req through a Request of its own; the server judges
// through the Request of its call.
func (w *wrapped) Handle(ctx context.Context, req admission.Request) admission.Response {
	return w.judge(ctx, rule.NewRequest(req))
}

func (w *wrapped) judge(ctx context.Context, req *rule.Request) (resp admission.Response) {
	start := time.Now()
	defer func() {
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
	case rule.Identities{Users: w.opts.ExemptUsers, Groups: w.opts.ExemptGroups}.Has(req.UserInfo):
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

// A judge answers one request at a path, as the server asks it: through
// the Request of the server's call, whose memory is reused.
type judge interface {
	judge(ctx context.Context, req *rule.Request) admission.Response
}

// handlerJudge serves an admission.Handler at a path (serve).
type handlerJudge struct{ admission.Handler }

func (h handlerJudge) judge(ctx context.Context, req *rule.Request) admission.Response {
	return h.Handle(ctx, req.Request)
}

// ruleEvents is DenialEvents for one rule, built once by wrap.
type ruleEvents struct {
	*DenialEvents
	rule     string
	recorder EventRecorder
}

// denied is called by Wrap for every request it denies (enforce mode, no
// exemption, no break-glass) and records an Event when the writer is a
// service account. Warn and audit mode, exempt users and break-glass
// allow the request, so there is no refusal to report; people get the
// denial message in their terminal, so an Event would only repeat it.
func (r *ruleEvents) denied(req *rule.Request, verdict string) {
	// A dry run must change nothing: Steward's webhooks promise
	// sideEffects None, which is what lets the API server call them for
	// dry runs at all. The agent learns of the refusal from its answer.
	if r == nil || !isServiceAccount(req.UserInfo.Username) || (req.DryRun != nil && *req.DryRun) {
		return
	}
	regarding, ok := regardingRef(req)
	if !ok {
		return
	}
	key := r.rule + "/" + regarding.APIVersion + "/" + regarding.Kind + "/" + regarding.Namespace + "/" + regarding.Name
	now := r.now()
	r.mu.Lock()
	if last, ok := r.cooldown.Get(key); ok && now.Sub(last.(time.Time)) < EventCooldown {
		r.mu.Unlock()
		r.dropped.WithLabelValues(r.rule, "cooldown").Inc()
		return
	}
	if !r.limiter.TryAccept() {
		r.mu.Unlock()
		r.dropped.WithLabelValues(r.rule, "rate-limit").Inc()
		return
	}
	regarding.UID = objectUID(req)
	e := pendingEvent{recorder: r.recorder, regarding: regarding, action: string(req.Operation), note: eventNote(req, verdict)}
	select {
	case r.queue <- e:
		r.cooldown.Add(key, now)
		r.mu.Unlock()
		r.queued.WithLabelValues(r.rule).Inc()
	default:
		r.mu.Unlock()
		r.dropped.WithLabelValues(r.rule, "queue-full").Inc()
	}
}

// isServiceAccount says whether user is system:serviceaccount:<ns>:<name>.
func isServiceAccount(user string) bool {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return false
	}
	ns, name, ok := strings.Cut(rest, ":")
	return ok && ns != "" && name != "" && !strings.Contains(name, ":")
}

// regardingRef is the object the request writes. There is none to name
// when a CREATE asks for a generated name (the Event's own name is built
// from the object's), or when the request is for the scale subresource,
// whose kind is Scale, not the object's (which the request does not carry).
// A CREATE's object does not exist yet, so its reference has no uid; the
// API server accepts that and `kubectl describe` matches by kind and name.
func regardingRef(req *rule.Request) (*corev1.ObjectReference, bool) {
	if req.Name == "" || req.SubResource == "scale" {
		return nil, false
	}
	return &corev1.ObjectReference{
		APIVersion: schema.GroupVersion{Group: req.Kind.Group, Version: req.Kind.Version}.String(),
		Kind:       req.Kind.Kind,
		Namespace:  req.Namespace,
		Name:       req.Name,
	}, true
}

// objectUID is the written object's uid, read from the stored object (the
// old one of an UPDATE or DELETE); it is only decoded for a request that
// gets an Event. A CREATE's object carries the uid the API server gave it
// before admission, which names nothing once the create is refused.
func objectUID(req *rule.Request) types.UID {
	return types.UID(req.OldView().UID())
}

// eventNote says who was refused what, then the denial, cut to the API
// server's limit on a whole character.
func eventNote(req *rule.Request, verdict string) string {
	what := string(req.Operation)
	if req.SubResource != "" {
		what += " of " + req.SubResource
	}
	return TruncateNote("Refused " + what + " by " + req.UserInfo.Username + ": " + verdict)
}

// TruncateNote cuts s to MaxEventNote bytes, ending with "…" when cut.
func TruncateNote(s string) string {
	if len(s) <= MaxEventNote {
		return s
	}
	const ellipsis = "…"
	cut := MaxEventNote - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
