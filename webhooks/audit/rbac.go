package audit

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/stewardhq/steward/webhooks/config"
)

// LeaseName names the Lease, in Steward's namespace, held by the replica
// that runs the audit (steward serve --leader-elect).
const LeaseName = "steward-leader"

// RBAC is what publishing the reports of the configured report APIs
// (audit.reportAPIs) needs: listing them and creating them anywhere, and
// updating and deleting only those named ReportName. It is granted
// whatever audit.interval says, so a reloaded configuration can turn the
// audit on without new manifests; an API left out of audit.reportAPIs is
// granted nothing.
func RBAC(c config.AuditConfig) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, api := range ReportAPIs(c.Reports()) {
		resources := []string{api.Namespaced.Resource, api.Cluster.Resource}
		out = append(out,
			rbacv1.PolicyRule{APIGroups: []string{api.Namespaced.Group}, Resources: resources, Verbs: []string{"list", "create"}},
			rbacv1.PolicyRule{APIGroups: []string{api.Namespaced.Group}, Resources: resources, Verbs: []string{"update", "delete"}, ResourceNames: []string{ReportName}})
	}
	return out
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
