package claimguard

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// AggregationLabel marks ClusterRoles whose rules Steward's claimguard
// ClusterRole aggregates. Composite and managed resource kinds live in
// groups nobody knows in advance, and "list every resource in every group"
// would include Secrets, so installers grant list and watch per group (one
// ClusterRole per provider or XRD group) and label it with this key.
const AggregationLabel = "steward.dev/aggregate-to-claimguard"

// RBAC is what claimguard itself reads, independent of the Crossplane
// kinds in the cluster: XRDs (CRDs come through the cluster cache, which
// declares its own access).
// Keeping the rules of its own webhook entries (get and patch on Steward's
// ValidatingWebhookConfiguration only, by name) follows from their
// DynamicRules (rule.Spec.PolicyRules).
func RBAC() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.crossplane.io"}, Resources: []string{"compositeresourcedefinitions"}, Verbs: []string{"list", "watch"}},
	}
}

// KindRBAC grants list and watch on the given resources of one API group:
// the rules of one aggregated ClusterRole for a provider's managed
// resources or an XRD's composite resources.
func KindRBAC(group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: []string{"list", "watch"}}
}

// SandboxRBAC is the aggregated rule set for the sandbox's Crossplane
// kinds: the sample XRD xpostgresqlinstances.database.example.org, the
// sample managed resource rdsinstances.database.aws.example.org, and
// provider-sql's PostgreSQL roles and databases in its legacy and
// namespaced (.m.) groups.
func SandboxRBAC() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		KindRBAC("database.example.org", "xpostgresqlinstances"),
		KindRBAC("database.aws.example.org", "rdsinstances"),
		KindRBAC("postgresql.sql.crossplane.io", "roles", "databases"),
		KindRBAC("postgresql.sql.m.crossplane.io", "roles", "databases"),
	}
}
