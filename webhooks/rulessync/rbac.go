package rulessync

import rbacv1 "k8s.io/api/rbac/v1"

// LeaseName names the Lease, in Steward's namespace, held by the replica
// that keeps Steward's registration (steward serve --leader-elect).
const LeaseName = "steward-registration"

// RBAC is what keeping the registration reg needs cluster-wide: reading,
// watching and patching Steward's own two configurations by name, and
// creating them, which RBAC cannot narrow to a name (a create's object
// has no name until it is read).
func RBAC(reg Registration) []rbacv1.PolicyRule {
	verbs := []string{"get", "list", "watch", "patch"}
	out := []rbacv1.PolicyRule{
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"}, Verbs: verbs, ResourceNames: []string{reg.Validating}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations"}, Verbs: verbs, ResourceNames: []string{reg.Mutating}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}, Verbs: []string{"create"}},
	}
	return out
}

// NamespaceRBAC is what keeping the registration needs in Steward's own
// namespace: watching its Deployment by name, to tell an uninstall, and
// electing the replica that keeps it (its Lease, by name; creating a
// Lease cannot be narrowed to a name).
func NamespaceRBAC(reg Registration) []rbacv1.PolicyRule {
	out := []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update"}, ResourceNames: []string{LeaseName}},
	}
	if reg.Deployment != "" {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}, ResourceNames: []string{reg.Deployment}})
	}
	return out
}
