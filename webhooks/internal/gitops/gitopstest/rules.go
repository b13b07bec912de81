package gitopstest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/rule"
)

// ObjectRules are the rules of every GitOps guard's object webhooks,
// written out as the guards' registration tests expect them: every
// resource, and the subresources that store the object.
func ObjectRules() []admissionregistrationv1.RuleWithOperations {
	all := admissionregistrationv1.AllScopes
	namespaced := admissionregistrationv1.NamespacedScope
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE", "DELETE"},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}, Scope: &all},
	}, {
		Operations: []admissionregistrationv1.OperationType{"UPDATE"},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/status"}, Scope: &all},
	}, {
		Operations: []admissionregistrationv1.OperationType{"UPDATE"},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/ephemeralcontainers", "pods/resize"}, Scope: &namespaced},
	}}
}

// ScaleRules are the rules of every GitOps guard's scale webhook, written
// out: the scale subresources of the workloads the tools deploy.
func ScaleRules() []admissionregistrationv1.RuleWithOperations {
	namespaced := admissionregistrationv1.NamespacedScope
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{"UPDATE"},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"*"}, Resources: []string{"deployments/scale", "statefulsets/scale", "replicasets/scale"}, Scope: &namespaced},
	}, {
		Operations: []admissionregistrationv1.OperationType{"UPDATE"},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"replicationcontrollers/scale"}, Scope: &namespaced},
	}}
}

// Registration is what the guards' registration tests compare of a
// webhook: where it is, what it matches, how it fails, and its
// matchConditions by name.
type Registration struct {
	Name, Path     string
	Rules          []admissionregistrationv1.RuleWithOperations
	FailurePolicy  admissionregistrationv1.FailurePolicyType
	TimeoutSeconds int32
	ObjectSelector *metav1.LabelSelector
	Conditions     []string
}

// Registrations are the webhooks of spec as Registrations. A webhook that
// states no reason for its failure policy fails t.
func Registrations(t testing.TB, spec rule.Spec) []Registration {
	t.Helper()
	out := []Registration{}
	for _, wh := range spec.Webhooks {
		var names []string
		for _, c := range wh.MatchConditions {
			names = append(names, c.Name)
		}
		out = append(out, Registration{wh.Name, wh.Path, wh.Rules, wh.FailurePolicy, wh.TimeoutSeconds, wh.ObjectSelector, names})
		if wh.FailurePolicyReason == "" {
			t.Errorf("webhook %s states no reason for its failure policy", wh.Name)
		}
	}
	return out
}

// Labelled is an objectSelector that requires the label key.
func Labelled(key string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}}
}

// CheckSpec fails t unless spec registers the validating rule name with
// the webhooks want.
func CheckSpec(t testing.TB, spec rule.Spec, name string, want []Registration) {
	t.Helper()
	if diff := cmp.Diff(want, Registrations(t, spec)); diff != "" {
		t.Errorf("Spec().Webhooks: -want, +got:\n%s", diff)
	}
	if spec.Name != name || spec.Type != rule.Validating {
		t.Errorf("Spec() = %s/%s, want %s/%s", spec.Name, spec.Type, name, rule.Validating)
	}
}

// AuditRules are what every guard's audit is granted, written out as the
// guards' RBAC tests expect them: get (a scale's check of who declares
// the replicas) and list (the audit's) on the workloads, and list of the
// autoscalers (the fight check's).
func AuditRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "replicasets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"replicationcontrollers"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}, Verbs: []string{"list"}},
	}
}

// ScaleRegistration is a guard's scale webhook, named name at path, with
// its one condition: it fails open, every guard's the same way.
func ScaleRegistration(name, path, condition string) Registration {
	return Registration{
		Name: name, Path: path, Rules: ScaleRules(),
		FailurePolicy: admissionregistrationv1.Ignore, TimeoutSeconds: 2,
		Conditions: []string{condition},
	}
}

// UpdateRule is a rule of a guard's record webhook: updates of a
// namespaced resource of group, at any version.
func UpdateRule(group, resource string) admissionregistrationv1.RuleWithOperations {
	namespaced := admissionregistrationv1.NamespacedScope
	return admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{"UPDATE"},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}, Scope: &namespaced},
	}
}

// RecordRegistration is a guard's record webhook, named name at path, for
// the updates of rules (UpdateRule): it fails closed, every guard's the
// same way.
func RecordRegistration(name, path string, rules ...admissionregistrationv1.RuleWithOperations) Registration {
	return Registration{
		Name: name, Path: path, Rules: rules,
		FailurePolicy: admissionregistrationv1.Fail, TimeoutSeconds: 3,
		Conditions: []string{"not-the-tool-or-kubernetes-controller"},
	}
}

// Scale is an autoscaling/v1 Scale of a workload in namespace as the API
// server sends it, with the replicas asked for.
func Scale(namespace, name string, replicas int) map[string]any {
	return map[string]any{
		"apiVersion": "autoscaling/v1", "kind": "Scale",
		"metadata": map[string]any{"name": name, "namespace": namespace, "resourceVersion": "48213"},
		"spec":     map[string]any{"replicas": replicas},
		"status":   map[string]any{"replicas": 3, "selector": "app.kubernetes.io/name=" + name},
	}
}
