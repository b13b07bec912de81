package webhooks

import (
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/webhooks/config"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Timeout ceilings. The API server waits this long, at most, for a write
// that reaches Steward while Steward is hung; the default of 10 s is what
// has cost clusters their control-plane leader election.
const (
	maxValidatingTimeout = 3
	maxMutatingTimeout   = 2
)

// TestEveryWebhookHasADeliberateFailurePolicyAndShortTimeout proves that a
// hung or unreachable Steward costs each write at most 3 s (validating) or
// 2 s (mutating), and that every webhook states its failure policy and why,
// so that an outage behaves as designed rather than by default.
func TestEveryWebhookHasADeliberateFailurePolicyAndShortTimeout(t *testing.T) {
	rules := Rules(config.Defaults(Sections()))
	if len(rules) == 0 {
		t.Fatal("no rules are registered")
	}
	for _, c := range rules {
		spec := c.Rule.Spec()
		if len(spec.Webhooks) == 0 {
			t.Errorf("rule %s has no webhooks", spec.Name)
		}
		limit := int32(maxValidatingTimeout)
		if spec.Type == rule.Mutating {
			limit = maxMutatingTimeout
		}
		for _, wh := range spec.Webhooks {
			t.Run(wh.Name, func(t *testing.T) {
				if wh.TimeoutSeconds < 1 || wh.TimeoutSeconds > limit {
					t.Errorf("%s webhook %s: timeoutSeconds %d, want 1..%d: an unset timeout is 10 s, long enough to cost the control plane its leases",
						spec.Type, wh.Name, wh.TimeoutSeconds, limit)
				}
				if wh.FailurePolicy != admissionregistrationv1.Fail && wh.FailurePolicy != admissionregistrationv1.Ignore {
					t.Errorf("webhook %s: failurePolicy %q, want Fail or Ignore chosen explicitly", wh.Name, wh.FailurePolicy)
				}
				if strings.TrimSpace(wh.FailurePolicyReason) == "" {
					t.Errorf("webhook %s: FailurePolicyReason is empty: say why an outage should %s", wh.Name, wh.FailurePolicy)
				}
			})
		}
	}
}

// TestNoWebhookCanInterceptTheControlPlane proves that no webhook is
// registered for what the control plane needs to keep running while
// Steward is down: Leases (leader election, node heartbeats), TokenReviews
// and SubjectAccessReviews, and that no wildcard rule goes out unnarrowed.
func TestNoWebhookCanInterceptTheControlPlane(t *testing.T) {
	forbidden := map[string][]string{
		"coordination.k8s.io":   {"leases"},
		"authentication.k8s.io": {"tokenreviews"},
		"authorization.k8s.io":  {"subjectaccessreviews", "selfsubjectaccessreviews", "localsubjectaccessreviews"},
	}
	for _, c := range Rules(config.Defaults(Sections())) {
		for _, wh := range c.Rule.Spec().Webhooks {
			for _, r := range wh.Rules {
				wildcard := slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*")
				if wildcard && wh.ObjectSelector == nil && len(wh.MatchConditions) == 0 {
					t.Errorf("webhook %s matches %v/%v with neither an objectSelector nor matchConditions: every write in the cluster would wait for Steward", wh.Name, r.APIGroups, r.Resources)
				}
				for group, resources := range forbidden {
					if !slices.Contains(r.APIGroups, group) {
						continue
					}
					for _, res := range resources {
						if slices.Contains(r.Resources, res) || slices.Contains(r.Resources, res+"/*") {
							t.Errorf("webhook %s matches %s.%s: the control plane must never wait for Steward", wh.Name, res, group)
						}
					}
				}
			}
		}
	}
}
