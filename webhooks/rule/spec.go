// Package rule is the contract every Steward rule implements: an admission
// handler plus a Spec that says how the API server must call it. The server
// registers handlers and the manifests render webhook configurations from the
// same Specs, so routes and configuration cannot drift apart.
package rule

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
	// RBAC is what the rule reads or writes in the cluster (informer
	// caches, lookups). The rendered ClusterRole grants exactly the union of
	// every rule's PolicyRules (RBAC plus what DynamicRules need), so RBAC
	// follows the rules.
	RBAC []rbacv1.PolicyRule
	// AggregatedRoles are ClusterRoles rendered without rules of their own
	// and bound to Steward; Kubernetes fills them with the rules of every
	// ClusterRole carrying their label. A rule needs one when what it reads
	// is known only to the installer (kinds in groups nobody knows in
	// advance), where granting every resource would include Secrets.
	AggregatedRoles []AggregatedRole
}

// AggregatedRole is a ClusterRole aggregated by label, named
// "<install>-<rule>-<Name>" ("steward-<rule>-<Name>") and bound to Steward's service account.
type AggregatedRole struct {
	// Name ends the ClusterRole's name, e.g. "kinds".
	Name string
	// Label is the key a ClusterRole carries, with the value "true", for
	// its rules to be aggregated into this one.
	Label string
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
	// DynamicRules, when set, are the entry's rules while Steward runs:
	// rulessync.Syncer keeps the live entry's rules equal to them. Rules is then
	// what the manifests install, usually nothing.
	DynamicRules *DynamicRules
}

// DynamicRules are the rules of a webhook entry that follow the cluster,
// such as kinds that exist only once a CustomResourceDefinition or a
// Crossplane XRD defines them, so no manifest can list them.
type DynamicRules struct {
	// Configuration names the live webhook configuration (of the rule's
	// Type) that holds the entry.
	Configuration string
	// Guards says what the rules cover, for the log lines about them, e.g.
	// "claim and composite resource kinds".
	Guards string
	// Current returns the rules the entry must have now. ok is false while
	// the rule cannot tell yet (its caches have not synced): the live rules
	// are then left as they are.
	Current func() (rules []admissionregistrationv1.RuleWithOperations, ok bool)
	// Changed receives a value whenever Current may return something new.
	// rulessync.Syncer also checks periodically, so rules someone else reset (an
	// installer re-applying its manifest) are restored.
	Changed <-chan struct{}
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
