// Package rule is the contract every Steward rule implements: an admission
// handler plus a Spec that says how the API server must call it. The server
// registers handlers and the manifests render webhook configurations from the
// same Specs, so routes and configuration cannot drift apart.
package rule

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Type says whether a rule's webhooks are validating or mutating.
type Type string

const (
	// Validating rules allow or deny; they never change the object.
	Validating Type = "Validating"
	// Mutating rules may patch the object and add warnings.
	Mutating Type = "Mutating"
)

// Spec describes how a rule is registered with the API server.
type Spec struct {
	// Name is the rule's short name, e.g. "fleetguard". It labels metrics,
	// logs and audit annotations, and names the rule's config section.
	Name string
	// Type is the kind of webhook configuration the rule's webhooks join.
	Type Type
	// Webhooks are the webhook entries of the rule. All of them are served by
	// the rule's one handler, each at its own path; a rule needs several when
	// parts of its traffic need different selectors (a scale subresource
	// carries no labels, so it cannot share an objectSelector with its parent).
	Webhooks []Webhook
}

// Webhook is one entry of a webhook configuration, as plain data.
type Webhook struct {
	// Name is the webhook's fully qualified name, e.g. "fleetguard.steward.dev".
	Name string
	// Path is the URL path the server serves the webhook at.
	Path string
	// Rules are the operations and resources the API server sends.
	Rules []admissionregistrationv1.RuleWithOperations
	// FailurePolicy is what the API server does when Steward cannot answer.
	FailurePolicy admissionregistrationv1.FailurePolicyType
	// FailurePolicyReason explains the choice; it is rendered as an
	// annotation next to the configuration so operators can see why.
	FailurePolicyReason string
	// TimeoutSeconds bounds how long the API server waits (1-30).
	TimeoutSeconds int32
	// MatchPolicy is Exact or Equivalent (the default when empty).
	MatchPolicy admissionregistrationv1.MatchPolicyType
	// NamespaceSelector narrows namespaced requests. Steward's own namespace
	// and kube-system are always excluded on top of it when rendered.
	NamespaceSelector *metav1.LabelSelector
	// ObjectSelector narrows requests by the object's labels.
	ObjectSelector *metav1.LabelSelector
	// MatchConditions are CEL expressions the API server evaluates before
	// calling Steward; a request that fails one never leaves the API server.
	MatchConditions []admissionregistrationv1.MatchCondition
	// ReinvocationPolicy applies to mutating webhooks only.
	ReinvocationPolicy admissionregistrationv1.ReinvocationPolicyType
}

// Operations is a shorthand for a list of admission operations.
func Operations(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.OperationType {
	return ops
}

// Resources builds one rule entry for the given groups, versions and
// resources at the given scope.
func Resources(ops []admissionregistrationv1.OperationType, groups, versions, resources []string, scope admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule: admissionregistrationv1.Rule{
			APIGroups:   groups,
			APIVersions: versions,
			Resources:   resources,
			Scope:       &scope,
		},
	}
}
