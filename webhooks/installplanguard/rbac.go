package installplanguard

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// RBAC is what the rule reads from the cluster: InstallPlans, for the phase
// cache behind the Subscription warning and the audit, and Subscriptions,
// for the audit. Discovery needs no grant.
func RBAC() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{
		APIGroups: []string{group},
		Resources: []string{"installplans", "subscriptions"},
		Verbs:     []string{"list", "watch"},
	}}
}
