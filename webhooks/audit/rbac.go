package audit

import rbacv1 "k8s.io/api/rbac/v1"

// LeaseName names the Lease, in Steward's namespace, held by the replica
// that runs the audit (steward serve --leader-elect).
const LeaseName = "steward-leader"

// RBAC is what publishing the reports needs: listing them and creating
// them anywhere, and updating and deleting only those named ReportName.
// It is granted whatever audit.interval says, so a reloaded configuration
// can turn the audit on without new manifests.
func RBAC() []rbacv1.PolicyRule {
	resources := []string{PolicyReports.Resource, ClusterPolicyReports.Resource}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{PolicyReports.Group}, Resources: resources, Verbs: []string{"list", "create"}},
		{APIGroups: []string{PolicyReports.Group}, Resources: resources, Verbs: []string{"update", "delete"}, ResourceNames: []string{ReportName}},
	}
}

// LeaderElectionRBAC is what electing the replica that audits needs, in
// Steward's namespace: creating the Lease and renewing it by name. The
// election records no Events: who leads is in the Lease, the log and
// steward_audit_leader.
func LeaderElectionRBAC() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update"}, ResourceNames: []string{LeaseName}},
	}
}
