package setup

import (
	"github.com/stewardhq/steward/webhooks/config"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Registration is what the manifests rendered for a configuration tell the
// API server and grant Steward: each rule's webhook entries and
// permissions, and the permission to record Events. Two configurations
// with equal Registrations need the same manifests.
type Registration struct {
	Rules  map[string]RuleRegistration
	Events []rbacv1.PolicyRule
}

// RuleRegistration is one rule's part of a Registration.
type RuleRegistration struct {
	Webhooks        []any
	RBAC            []rbacv1.PolicyRule
	AggregatedRoles []rule.AggregatedRole
	// Synced are the webhook configurations whose entries' rules the rule
	// keeps in sync while it runs (rule.DynamicRules), by entry name.
	Synced map[string]string
}

// RegistrationOf renders the registration of c's rules.
func RegistrationOf(c config.Config) Registration {
	target := rule.Target{Namespace: "steward", Service: "steward"}
	out := Registration{Rules: map[string]RuleRegistration{}, Events: webhooks.EventsRBAC(c)}
	for _, r := range webhooks.Rules(c) {
		spec := r.Rule.Spec()
		reg := RuleRegistration{RBAC: spec.PolicyRules(), AggregatedRoles: spec.AggregatedRoles, Synced: map[string]string{}}
		for _, wh := range spec.Webhooks {
			if spec.Type == rule.Mutating {
				reg.Webhooks = append(reg.Webhooks, wh.MutatingWebhook(target))
			} else {
				reg.Webhooks = append(reg.Webhooks, wh.ValidatingWebhook(target))
			}
			if wh.DynamicRules != nil {
				reg.Synced[wh.Name] = wh.DynamicRules.Configuration
			}
		}
		out.Rules[r.Name] = reg
	}
	return out
}

// Equal says whether two registrations need the same manifests.
func (r Registration) Equal(o Registration) bool {
	return equality.Semantic.DeepEqual(r, o)
}
