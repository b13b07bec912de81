package manifests

import (
	"encoding/json"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/audit"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/rulessync"
)

// baseRBAC grants Steward exactly what its rules' Specs, the cluster
// cache, the Events for refused writes and the background audit declare
// they read or write, and nothing else, plus the ClusterRoles the rules
// aggregate and, in its own namespace, the Lease of leader election.
func (in install) baseRBAC(cfg config.Config, rules []webhooks.Configured) []any {
	policy := append(webhooks.ClusterCacheRBAC(), webhooks.EventsRBAC(cfg)...)
	policy = append(policy, audit.RBAC(cfg.Audit)...)
	policy = append(policy, rulessync.RBAC(in.registration())...)
	var aggregated []any
	for _, c := range rules {
		spec := c.Rule.Spec()
		policy = append(policy, spec.PolicyRules()...)
		for _, r := range spec.AggregatedRoles {
			role := in.clusterRole(in.name+"-"+spec.Name+"-"+r.Name, nil)
			role.AggregationRule = aggregationRule(r.Label)
			aggregated = append(aggregated, role, in.clusterRoleBinding(role.Name))
		}
	}
	policy = append(policy, metricsAuthRules...)
	out := []any{in.clusterRole(in.name, uniqueRules(policy)), in.clusterRoleBinding(in.name)}
	out = append(out, aggregated...)
	out = append(out, in.clusterRole(in.metricsReaderRole(), metricsReaderRules))
	election := in.name + "-leader-election"
	return append(out, in.role(election, uniqueRules(append(audit.LeaderElectionRBAC(), rulessync.NamespaceRBAC(in.registration())...))), in.roleBinding(election))
}

// registration is what the install's Steward keeps (steward serve
// --keep-registration): its two configurations, named after the install,
// and, to tell an uninstall, its namespace and Deployment.
func (in install) registration() rulessync.Registration {
	return rulessync.Registration{Validating: in.name, Mutating: in.name, Target: in.target(), Deployment: in.name}
}

// The Role named <install>-leader-election lets Steward's replicas elect
// the one that runs the background audit and the one that keeps the
// registration (steward serve --leader-elect): their Leases, and the
// Deployment whose deletion tells an uninstall, in Steward's namespace
// only.

// metricsAuthRules let Steward ask the API server who a metrics scraper is
// and whether it may read /metrics (steward serve --metrics-secure).
var metricsAuthRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
}

// MetricsReaderRole is the ClusterRole to bind to Prometheus' service
// account: it may read Steward's metrics, and nothing else. It is named
// after the install (this is an install named Name's).
const MetricsReaderRole = Name + "-metrics-reader"

func (in install) metricsReaderRole() string { return in.name + "-metrics-reader" }

var metricsReaderRules = []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}

// aggregationRule makes a ClusterRole with no rules of its own
// (rule.AggregatedRole): installers grant what the rule reads in
// ClusterRoles carrying the label, and Kubernetes aggregates them here.
func aggregationRule(label string) *rbacv1.AggregationRule {
	return &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{label: "true"}},
	}}
}

func (in install) clusterRole(name string, policy []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: in.labels()},
		Rules:      policy,
	}
}

func (in install) clusterRoleBinding(name string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: in.labels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: in.name, Namespace: in.ns}},
	}
}

func (in install) role(name string, policy []rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: in.meta(name),
		Rules:      policy,
	}
}

func (in install) roleBinding(name string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: in.meta(name),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: in.name, Namespace: in.ns}},
	}
}

// uniqueRules drops rules that two rules both asked for, keeping order.
func uniqueRules(policy []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	var seen []string
	for _, p := range policy {
		key, _ := json.Marshal(p)
		if slices.Contains(seen, string(key)) {
			continue
		}
		seen = append(seen, string(key))
		out = append(out, p)
	}
	return out
}
