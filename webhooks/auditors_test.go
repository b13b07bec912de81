package webhooks

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/rule"
)

// auditingRule is a rule that can audit.
type auditingRule struct{ plainRule }

func (auditingRule) Audit(context.Context, client.Reader) ([]rule.Finding, error) { return nil, nil }

// plainRule cannot audit.
type plainRule struct{}

func (plainRule) Handle(context.Context, *rule.Request) admission.Response {
	return admission.Allowed("")
}
func (plainRule) Spec() rule.Spec { return rule.Spec{} }

// TestAuditorsAreTheRulesOnThatAudit: the audit asks the rules that can
// audit, in the list's order, but not one turned off or disabled in the
// audit section.
func TestAuditorsAreTheRulesOnThatAudit(t *testing.T) {
	rules := []Configured{
		{Name: "suspendnotice", Rule: auditingRule{}, Mode: rule.Enforce},
		{Name: "installplanguard", Rule: auditingRule{}, Mode: rule.Warn},
		{Name: "fleetguard", Rule: auditingRule{}, Mode: rule.Enforce},
		{Name: "claimguard", Rule: auditingRule{}, Mode: rule.Off},
		{Name: "apimigration", Rule: plainRule{}, Mode: rule.Enforce},
	}
	cfg := config.AuditConfig{DisabledRules: []string{"fleetguard"}}
	var got []string
	for _, a := range Auditors(cfg, rules) {
		got = append(got, a.Name)
	}
	if diff := cmp.Diff([]string{"suspendnotice", "installplanguard"}, got); diff != "" {
		t.Errorf("Auditors: -want +got:\n%s", diff)
	}
}
