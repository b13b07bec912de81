package serving_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/serving"
)

// fakeRule answers every request with a fixed response, after a delay,
// or panics.
type fakeRule struct {
	name  string
	typ   rule.Type
	resp  admission.Response
	panic bool
	delay time.Duration
}

func (f fakeRule) Handle(context.Context, *rule.Request) admission.Response {
	time.Sleep(f.delay)
	if f.panic {
		panic("boom")
	}
	return f.resp
}

func (f fakeRule) Spec() rule.Spec { return rule.Spec{Name: f.name, Type: f.typ} }

type result struct {
	Allowed  bool
	Code     int32
	Message  string
	Warnings []string
	Audit    map[string]string
	Patches  int
}

func summarize(r admission.Response) result {
	out := result{Allowed: r.Allowed, Warnings: r.Warnings, Audit: r.AuditAnnotations, Patches: len(r.Patches)}
	if r.Result != nil {
		out.Code, out.Message = r.Result.Code, r.Result.Message
	}
	return out
}

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

func TestWrapAppliesModesExemptionsAndFailurePolicy(t *testing.T) {
	denied := admission.Denied("no")
	patched := admission.PatchResponseFromRaw([]byte(`{"a":1}`), []byte(`{"a":2}`))
	request := admissiontest.Update(deployments, "Deployment", map[string]any{"metadata": map[string]any{"name": "web", "namespace": "default"}}, map[string]any{"metadata": map[string]any{"name": "web", "namespace": "default"}})
	tests := map[string]struct {
		reason   string
		rule     fakeRule
		webhook  rule.Webhook
		opts     serving.Options
		req      admission.Request
		want     result
		decision serving.Decision
	}{
		"EnforceKeepsTheDenial": {
			reason:   "enforce mode returns the rule's denial unchanged",
			rule:     fakeRule{typ: rule.Validating, resp: denied},
			opts:     serving.Options{Mode: rule.Enforce},
			req:      request.Build(),
			want:     result{Code: 403, Message: "no", Audit: map[string]string{"decision": "denied", "reason": "no"}},
			decision: serving.Denied,
		},
		"WarnAllowsWithTheDenialAsWarning": {
			reason:   "warn mode lets the request through and shows the denial",
			rule:     fakeRule{typ: rule.Validating, resp: denied},
			opts:     serving.Options{Mode: rule.Warn},
			req:      request.Build(),
			want:     result{Allowed: true, Code: 200, Message: "no", Warnings: []string{"no"}, Audit: map[string]string{"decision": "warned", "reason": "no"}},
			decision: serving.Warned,
		},
		"AuditAllowsSilently": {
			reason:   "audit mode allows without a warning; only the audit annotation records it",
			rule:     fakeRule{typ: rule.Validating, resp: denied},
			opts:     serving.Options{Mode: rule.Audit},
			req:      request.Build(),
			want:     result{Allowed: true, Code: 200, Message: "no", Audit: map[string]string{"decision": "audited", "reason": "no"}},
			decision: serving.Audited,
		},
		"AuditDropsPatches": {
			reason:   "audit mode has no visible effect, so a mutating rule's patch is dropped",
			rule:     fakeRule{typ: rule.Mutating, resp: patched},
			opts:     serving.Options{Mode: rule.Audit},
			req:      request.Build(),
			want:     result{Allowed: true, Code: 200, Audit: map[string]string{"decision": "audited"}},
			decision: serving.Audited,
		},
		"ExemptUserBypassesWithWarning": {
			reason: "an exempt user is allowed, told what would have happened, and named in the audit log",
			rule:   fakeRule{typ: rule.Validating, resp: denied},
			opts:   serving.Options{Mode: rule.Enforce, ExemptUsers: []string{"ci-bot"}},
			req:    request.User("ci-bot").Build(),
			want: result{Allowed: true, Code: 200, Message: "no",
				Warnings: []string{"guard: allowed because ci-bot is exempt; without the exemption: no"},
				Audit:    map[string]string{"decision": "bypassed", "reason": "no", "bypassed-by": "ci-bot"}},
			decision: serving.Bypassed,
		},
		"ExemptGroupBypasses": {
			reason: "membership of an exempt group is enough",
			rule:   fakeRule{typ: rule.Validating, resp: denied},
			opts:   serving.Options{Mode: rule.Enforce, ExemptGroups: []string{"platform"}},
			req:    request.User("sam", "platform").Build(),
			want: result{Allowed: true, Code: 200, Message: "no",
				Warnings: []string{"guard: allowed because sam is exempt; without the exemption: no"},
				Audit:    map[string]string{"decision": "bypassed", "reason": "no", "bypassed-by": "sam"}},
			decision: serving.Bypassed,
		},
		"BreakGlassBypassesWithWarning": {
			reason: "a break-glass member is allowed, warned, and named in the audit log",
			rule:   fakeRule{typ: rule.Validating, resp: denied},
			opts:   serving.Options{Mode: rule.Enforce, BreakGlassGroup: "steward:break-glass"},
			req:    request.User("jane", "steward:break-glass").Build(),
			want: result{Allowed: true, Code: 200, Message: "no",
				Warnings: []string{"guard: break-glass by jane (group steward:break-glass) recorded; without it: no"},
				Audit:    map[string]string{"decision": "bypassed", "reason": "no", "break-glass-by": "jane"}},
			decision: serving.Bypassed,
		},
		"ValidatingErrorFailsClosed": {
			reason:   "a validating webhook with failurePolicy Fail refuses what it cannot check",
			rule:     fakeRule{typ: rule.Validating, resp: admission.Errored(http.StatusInternalServerError, errors.New("cache not synced"))},
			webhook:  rule.Webhook{FailurePolicy: admissionregistrationv1.Fail},
			opts:     serving.Options{Mode: rule.Enforce},
			req:      request.Build(),
			want:     result{Code: 500, Message: "guard could not check this request: cache not synced", Audit: map[string]string{"decision": "errored", "reason": "cache not synced"}},
			decision: serving.Errored,
		},
		"ValidatingErrorFailsOpenWhenPolicyIgnore": {
			reason:  "failurePolicy Ignore means an internal error allows, with a warning",
			rule:    fakeRule{typ: rule.Validating, resp: admission.Errored(http.StatusInternalServerError, errors.New("cache not synced"))},
			webhook: rule.Webhook{FailurePolicy: admissionregistrationv1.Ignore},
			opts:    serving.Options{Mode: rule.Enforce},
			req:     request.Build(),
			want: result{Allowed: true, Code: 200, Warnings: []string{"guard could not check this request and allowed it: cache not synced"},
				Audit: map[string]string{"decision": "errored", "reason": "cache not synced"}},
			decision: serving.Errored,
		},
		"MutatingErrorAllows": {
			reason: "a mutating rule must never block a write because of its own failure",
			rule:   fakeRule{typ: rule.Mutating, resp: admission.Errored(http.StatusBadRequest, errors.New("bad object"))},
			opts:   serving.Options{Mode: rule.Enforce},
			req:    request.Build(),
			want: result{Allowed: true, Code: 200, Warnings: []string{"guard could not check this request and allowed it: bad object"},
				Audit: map[string]string{"decision": "errored", "reason": "bad object"}},
			decision: serving.Errored,
		},
		"PanicBecomesAnError": {
			reason:   "a panicking rule answers like an internal error, never crashes the server",
			rule:     fakeRule{typ: rule.Validating, panic: true},
			webhook:  rule.Webhook{FailurePolicy: admissionregistrationv1.Fail},
			opts:     serving.Options{Mode: rule.Enforce},
			req:      request.Build(),
			want:     result{Code: 500, Message: "guard could not check this request: panic: boom", Audit: map[string]string{"decision": "errored", "reason": "panic: boom"}},
			decision: serving.Errored,
		},
		"EmptyRequestIsRefused": {
			reason:   "an AdmissionReview without a request never reaches the rule",
			rule:     fakeRule{typ: rule.Validating, resp: admission.Allowed("")},
			webhook:  rule.Webhook{FailurePolicy: admissionregistrationv1.Fail},
			opts:     serving.Options{Mode: rule.Enforce},
			req:      admission.Request{},
			want:     result{Code: 400, Message: "guard: AdmissionReview has no request (or the request has no uid)"},
			decision: serving.Errored,
		},
		"EmptyRequestIsRefusedEvenWhenFailingOpen": {
			reason:   "a malformed review is refused even by a mutating rule, which otherwise allows on errors",
			rule:     fakeRule{typ: rule.Mutating, resp: admission.Allowed("")},
			webhook:  rule.Webhook{FailurePolicy: admissionregistrationv1.Ignore},
			opts:     serving.Options{Mode: rule.Enforce},
			req:      admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "u1"}},
			want:     result{Code: 400, Message: "guard: admission request u1 has no operation"},
			decision: serving.Errored,
		},
		"PlainAllowIsNotAnnotated": {
			reason:   "an uneventful allow adds nothing to the audit log",
			rule:     fakeRule{typ: rule.Validating, resp: admission.Allowed("")},
			opts:     serving.Options{Mode: rule.Enforce},
			req:      request.Build(),
			want:     result{Allowed: true, Code: 200},
			decision: serving.Allowed,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.rule.name = "guard"
			tc.opts.Log = logr.Discard()
			tc.opts.Metrics = serving.NewMetrics()
			before := ruletest.DecisionCount(tc.opts.Metrics, "guard", tc.decision)
			got := serving.Wrap(tc.rule, tc.webhook, tc.opts).Handle(context.Background(), tc.req)
			if diff := cmp.Diff(tc.want, summarize(got)); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
			if after := ruletest.DecisionCount(tc.opts.Metrics, "guard", tc.decision); after != before+1 {
				t.Errorf("%s: counter %s went from %v to %v, want +1", tc.reason, tc.decision, before, after)
			}
		})
	}
}

func TestWrapTimesEveryDecision(t *testing.T) {
	request := admissiontest.Update(deployments, "Deployment", map[string]any{"metadata": map[string]any{"name": "web"}}, map[string]any{"metadata": map[string]any{"name": "web"}}).Build()
	tests := map[string]struct {
		reason string
		rule   fakeRule
		req    admission.Request
	}{
		"SlowAllow": {
			reason: "the rule's own time is what the histogram records",
			rule:   fakeRule{name: "timed-allow", typ: rule.Validating, resp: admission.Allowed(""), delay: 20 * time.Millisecond},
			req:    request,
		},
		"SlowPanic": {
			reason: "a panicking rule is timed too, so a slow failure shows as slow",
			rule:   fakeRule{name: "timed-panic", typ: rule.Validating, panic: true, delay: 20 * time.Millisecond},
			req:    request,
		},
		"MalformedRequest": {
			reason: "a refused malformed request counts as a decision",
			rule:   fakeRule{name: "timed-malformed", typ: rule.Validating, resp: admission.Allowed("")},
			req:    admission.Request{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			metrics := serving.NewMetrics()
			countBefore, sumBefore := ruletest.DecisionTimes(metrics, tc.rule.name)
			serving.Wrap(tc.rule, rule.Webhook{}, serving.Options{Log: logr.Discard(), Metrics: metrics}).Handle(context.Background(), tc.req)
			count, sum := ruletest.DecisionTimes(metrics, tc.rule.name)
			if count != countBefore+1 {
				t.Errorf("%s: %d decisions timed, want %d", tc.reason, count, countBefore+1)
			}
			if got, min := sum-sumBefore, tc.rule.delay.Seconds(); got < min || got <= 0 {
				t.Errorf("%s: recorded %.6fs, want at least %.6fs and more than zero", tc.reason, got, min)
			}
		})
	}
}
