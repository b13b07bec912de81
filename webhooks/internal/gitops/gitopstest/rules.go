package gitopstest

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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
