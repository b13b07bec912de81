package apimigration

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Spec registers one mutating webhook for every Flux kind in the table.
//
// Every version ("*") of each resource is listed, so a write through any
// served version matches directly: the API server sends it unconverted,
// and kind equals requestKind, the version the client used. matchPolicy
// Equivalent is kept so that a narrower version list, or a resource the
// API server knows under another version, would still reach the rule
// (converted, with requestKind naming the client's version, which Handle
// reads). A matchCondition built from the same table lets only writes
// through deprecated versions leave the API server: writes through current
// versions, which Flux controllers make all the time, never cost a call.
func (r *Rule) Spec() rule.Spec {
	return rule.Spec{
		Name: Name,
		Type: rule.Mutating,
		RBAC: crdRBAC(),
		Webhooks: []rule.Webhook{{
			Name:           rule.WebhookName(Name, ""),
			Path:           rule.Path(rule.Mutating, Name, ""),
			Rules:          webhookRules(),
			FailurePolicy:  admissionregistrationv1.Ignore,
			TimeoutSeconds: 2,
			FailurePolicyReason: "Flux and its users must never be blocked because Steward is unavailable: " +
				"without Steward a deprecated write goes unannotated and a removed version is refused by the API server itself once the CRDs drop it.",
			MatchPolicy:        admissionregistrationv1.Equivalent,
			MatchConditions:    []admissionregistrationv1.MatchCondition{{Name: "deprecated-flux-version", Expression: deprecatedExpression()}},
			ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
		}},
	}
}

// webhookRules lists each Flux group's resources explicitly, all versions,
// CREATE and UPDATE (status and other subresources are not matched).
func webhookRules() []admissionregistrationv1.RuleWithOperations {
	ops := rule.Operations(admissionregistrationv1.Create, admissionregistrationv1.Update)
	var groups []string
	resources := map[string][]string{}
	for _, a := range apis {
		if _, ok := resources[a.Group]; !ok {
			groups = append(groups, a.Group)
		}
		resources[a.Group] = append(resources[a.Group], a.Resource)
	}
	var out []admissionregistrationv1.RuleWithOperations
	for _, g := range groups {
		out = append(out, rule.Resources(ops, []string{g}, []string{"*"}, resources[g], admissionregistrationv1.NamespacedScope))
	}
	return out
}

// deprecatedExpression is a CEL expression true when the client wrote
// through a version that is deprecated or removed under any release of the
// table (whatever the target, so the rendered configuration does not depend
// on it; Handle leaves alone what the target keeps), e.g.
// request.requestResource.group + "/" + request.requestResource.resource + "/" + request.requestResource.version in [...].
func deprecatedExpression() string {
	var items []string
	for _, a := range apis {
		for _, v := range a.Guarded() {
			items = append(items, fmt.Sprintf("'%s/%s/%s'", a.Group, a.Resource, v))
		}
	}
	return "(request.requestResource.group + '/' + request.requestResource.resource + '/' + request.requestResource.version) in [" +
		strings.Join(items, ", ") + "]"
}

// crdRBAC lets the rule read the Flux CRDs, each by name: the audit their
// stored versions, and the target's follower, when no release label names
// the release, their deprecation marks and schemas. The cluster cache
// keeps CRDs as metadata only.
func crdRBAC() []rbacv1.PolicyRule {
	var names []string
	for _, a := range apis {
		names = append(names, a.Resource+"."+a.Group)
	}
	return []rbacv1.PolicyRule{{
		APIGroups:     []string{crdGVK.Group},
		Resources:     []string{"customresourcedefinitions"},
		ResourceNames: names,
		Verbs:         []string{"get"},
	}}
}

// Monitoring is apimigration's part of Steward's alerts and dashboard.
func (*Rule) Monitoring() rule.Monitoring {
	return rule.Monitoring{Panels: []rule.Panel{{Title: "apimigration target Flux release", Kind: "table",
		Description: "The Flux release each replica's apimigration decides against, and its source: config (pinned), cluster-label, served-versions or default.",
		Exprs:       []rule.PanelExpr{{Expr: `steward_apimigration_target_info{%[1]s}`}}}}}
}
