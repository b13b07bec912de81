package celtest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// CheckCompile reports, as a test error, each webhook whose matchConditions
// do not compile. Rules build conditions from configured names, so a test
// passes names with quotes and backslashes to prove they are escaped.
func CheckCompile(t *testing.T, webhooks []rule.Webhook) {
	t.Helper()
	for _, wh := range webhooks {
		if err := Compile(wh.MatchConditions); err != nil {
			t.Errorf("%s: %v", wh.Name, err)
		}
	}
}

// Case is one request and whether the API server sends it to the rule's
// webhook at index Webhook of its Spec.
type Case struct {
	Reason  string
	Webhook int
	Request admission.Request
	Sent    bool
}

// CheckCases runs each case as a subtest against webhooks' matchConditions.
// A condition that fails to evaluate fails the case: the API server would
// apply the failure policy to that request instead of deciding it.
func CheckCases(t *testing.T, webhooks []rule.Webhook, cases map[string]Case) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Sent(webhooks[tc.Webhook].MatchConditions, tc.Request)
			if err != nil {
				t.Fatalf("%s\nmatchConditions failed: %v", tc.Reason, err)
			}
			if diff := cmp.Diff(tc.Sent, got); diff != "" {
				t.Errorf("%s\nsent: -want +got:\n%s", tc.Reason, diff)
			}
		})
	}
}

// RequireSent fails the test unless the API server sends req to wh. A rule
// test calls it for every request the rule acts on (verdict says how), or
// the rule's conditions could hide from it the very requests it exists for.
func RequireSent(t *testing.T, wh rule.Webhook, req admission.Request, verdict string) {
	t.Helper()
	sent, err := Sent(wh.MatchConditions, req)
	if err != nil {
		t.Fatalf("matchConditions of %s: %v", wh.Name, err)
	}
	if !sent {
		t.Errorf("the rule acts on this request (%s) but %s's matchConditions keep it from Steward", verdict, wh.Name)
	}
}
