package gitopstest

import admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

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
