package rule

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
)

// PolicyRules is everything the rule needs granted in Steward's
// ClusterRole: its RBAC, then get, list, watch and patch on each webhook
// configuration holding entries with DynamicRules (by name only: a list or
// watch of one name is authorized by resourceNames), which
// rulessync.Syncer watches and applies to.
func (s Spec) PolicyRules() []rbacv1.PolicyRule {
	out := slices.Clone(s.RBAC)
	var seen []string
	for _, name := range s.dynamicConfigurations() {
		if slices.Contains(seen, name) {
			continue
		}
		seen = append(seen, name)
		out = append(out, rbacv1.PolicyRule{
			APIGroups:     []string{"admissionregistration.k8s.io"},
			Resources:     []string{s.Type.configurationResource()},
			ResourceNames: []string{name},
			Verbs:         []string{"get", "list", "watch", "patch"},
		})
	}
	return out
}

// dynamicConfigurations names the configuration of each entry with
// DynamicRules, in the entries' order.
func (s Spec) dynamicConfigurations() []string {
	var out []string
	for _, wh := range s.Webhooks {
		if wh.DynamicRules != nil {
			out = append(out, wh.DynamicRules.Configuration)
		}
	}
	return out
}

// FieldManager is the server-side apply field manager under which
// rulessync.Syncer owns the rules of a rule's entries with DynamicRules:
// "steward-<rule>". It must never change: a new manager would leave the old
// one owning the rules, so rules the old one applied would never be removed.
func FieldManager(rule string) string { return "steward-" + rule }

// ConfigurationKind is the kind of webhook configuration the rule's entries
// join.
func (t Type) ConfigurationKind() string {
	if t == Mutating {
		return "MutatingWebhookConfiguration"
	}
	return "ValidatingWebhookConfiguration"
}

// configurationResource is the API resource of ConfigurationKind.
func (t Type) configurationResource() string {
	if t == Mutating {
		return "mutatingwebhookconfigurations"
	}
	return "validatingwebhookconfigurations"
}
