package suspendnotice

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// RBAC is what the rule reads from the cluster: the Flux kinds, as
// metadata, for the suspension cache behind the event rewrite. Discovery
// needs no grant.
func RBAC() []rbacv1.PolicyRule {
	groups, resources := groupedResources()
	rules := make([]rbacv1.PolicyRule, 0, len(groups))
	for _, g := range groups {
		rules = append(rules, rbacv1.PolicyRule{
			APIGroups: []string{g},
			Resources: resources[g],
			Verbs:     []string{"list", "watch"},
		})
	}
	return rules
}
