package gitopstest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Args are what a case of a guard's Handle table sends: Req to Rule.
type Args struct {
	Rule rule.Rule
	Req  admission.Request
}

// HandleCase is a case of a guard's Handle table: the rule answers the
// request with Want, for Reason.
type HandleCase struct {
	Reason string
	Args   Args
	Want   admission.Response
}

// TestHandle runs a guard's Handle table, each case failing with its
// reason; then, on each answer, the guard's own checks.
func TestHandle(t *testing.T, cases map[string]HandleCase, checks ...func(*testing.T, Args, admission.Response)) {
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.Args.Rule.Handle(context.Background(), rule.NewRequest(tc.Args.Req))
			if diff := cmp.Diff(tc.Want, got); diff != "" {
				t.Errorf("%s\nHandle(...): -want, +got:\n%s", tc.Reason, diff)
			}
			for _, check := range checks {
				check(t, tc.Args, got)
			}
		})
	}
}

// Send is the case's request req to the rule r.
func Send(r rule.Rule, req admission.Request) Args { return Args{Rule: r, Req: req} }
