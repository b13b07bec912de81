package audit

import rbacv1 "k8s.io/api/rbac/v1"

// RBAC is what publishing the reports needs. It is granted whatever
// audit.interval says, so a reloaded configuration can turn the audit on
// without new manifests; Steward only ever writes the reports it labels
// and names.
func RBAC() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{
		APIGroups: []string{PolicyReports.Group},
		Resources: []string{PolicyReports.Resource, ClusterPolicyReports.Resource},
		Verbs:     []string{"get", "list", "create", "update", "delete"},
	}}
}
