package fleetguard

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/serving"
)

// TestModesThroughWrap proves fleetguard's verdicts work with the shared
// wrapper that applies modes, break-glass and failure policies.
func TestModesThroughWrap(t *testing.T) {
	imageChange := admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
		obj(webDeployment, container(0, "image", "ghcr.io/example/web:1.5.0")))
	denial := managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit
	annotated := func(resp admission.Response, kv ...string) admission.Response {
		resp.AuditAnnotations = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			resp.AuditAnnotations[kv[i]] = kv[i+1]
		}
		return resp
	}
	r := defaultRule()
	cases := map[string]struct {
		reason  string
		rule    *Rule // r when nil
		mode    rule.Mode
		webhook rule.Webhook
		req     admission.Request
		want    admission.Response
	}{
		"EnforceDenies": {
			reason:  "In enforce mode the denial reaches the user unchanged, and the audit log records it.",
			mode:    rule.Enforce,
			webhook: r.mainWebhook(),
			req:     imageChange.Build(),
			want:    annotated(admission.Denied(denial), "decision", "denied", "reason", denial),
		},
		"WarnAllowsWithTheDenialAsWarning": {
			reason:  "Warn mode lets the change through and shows the denial as a warning.",
			mode:    rule.Warn,
			webhook: r.mainWebhook(),
			req:     imageChange.Build(),
			want:    annotated(admission.Allowed(denial).WithWarnings(denial), "decision", "warned", "reason", denial),
		},
		"AuditAllowsSilently": {
			reason:  "Audit mode allows without a warning; only the audit log, log line and metric record it.",
			mode:    rule.Audit,
			webhook: r.mainWebhook(),
			req:     imageChange.Build(),
			want:    annotated(admission.Allowed(denial), "decision", "audited", "reason", denial),
		},
		"BreakGlassIsAllowedAndRecorded": {
			reason:  "A member of the break-glass group is allowed, warned, and named in the audit log.",
			mode:    rule.Enforce,
			webhook: r.mainWebhook(),
			req:     imageChange.User("jane", "steward:break-glass", "system:authenticated").Build(),
			want: annotated(admission.Allowed(denial).WithWarnings("fleetguard: break-glass by jane (group steward:break-glass) recorded; without it: "+denial),
				"decision", "bypassed", "reason", denial, "break-glass-by", "jane"),
		},
		"MainWebhookErrorsFailClosed": {
			reason:  "The main webhook's failure policy is Fail: an internal error refuses the request.",
			mode:    rule.Enforce,
			webhook: r.mainWebhook(),
			req:     admissiontest.Delete(deploymentsGVR, "Deployment", nil).Build(),
			want: func() admission.Response {
				msg := "fleetguard could not check this request: delete: the request carries no oldObject, so the object's owner cannot be checked"
				resp := admission.Errored(http.StatusBadRequest, errors.New(msg))
				return annotated(resp, "decision", "errored", "reason", "delete: the request carries no oldObject, so the object's owner cannot be checked")
			}(),
		},
		"ScaleWebhookErrorsFailOpen": {
			reason:  "The scale webhook's failure policy is Ignore: a rule that cannot read its cache allows with a warning.",
			rule:    New(Config{}, "steward:break-glass"),
			mode:    rule.Enforce,
			webhook: r.Spec().Webhooks[1],
			req:     scaleRequest(deploymentsGVR, "new", 1, 2).Build(),
			want: annotated(admission.Allowed("").WithWarnings("fleetguard could not check this request and allowed it: the workload metadata cache is not set up, so the owner of Deployment default/new cannot be checked"),
				"decision", "errored", "reason", "the workload metadata cache is not set up, so the owner of Deployment default/new cannot be checked"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			under := r
			if tc.rule != nil {
				under = tc.rule
			}
			h := ruletest.Handler(under, tc.webhook, tc.mode, serving.Settings{BreakGlassGroup: "steward:break-glass"}, nil)
			got := h.Handle(context.Background(), tc.req)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nWrap(...).Handle(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
