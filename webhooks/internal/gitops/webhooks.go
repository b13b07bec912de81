package gitops

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/stewardhq/steward/webhooks/rule"
)

// ObjectRules are the webhook rules of a guard's object webhook: every
// object, and the subresources that store it.
func ObjectRules() []admissionregistrationv1.RuleWithOperations {
	ops := rule.Operations(admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete)
	update := rule.Operations(admissionregistrationv1.Update)
	return []admissionregistrationv1.RuleWithOperations{
		// "*" covers every resource of every group and version, but no
		// subresource.
		rule.Resources(ops, []string{"*"}, []string{"*"}, []string{"*"}, admissionregistrationv1.AllScopes),
		// Writes through these subresources store the object they carry,
		// less what the subresource resets: a status write can strip
		// ownership markers or add an owner, ephemeral containers and
		// in-place resizes change a Pod's spec. An objectSelector still
		// applies, since their requests carry the whole object, and
		// matchConditions send status writes only when they change
		// metadata, so controllers' status updates cost no call.
		rule.Resources(update, []string{"*"}, []string{"*"}, []string{"*/status"}, admissionregistrationv1.AllScopes),
		rule.Resources(update, []string{""}, []string{"v1"}, []string{"pods/ephemeralcontainers", "pods/resize"}, admissionregistrationv1.NamespacedScope),
	}
}

// ScaleWebhook is a guard's webhook for the scale subresource of the
// workloads GitOps tools commonly deploy.
func ScaleWebhook(ruleName, tool string, agent Identities) rule.Webhook {
	return rule.Webhook{
		Name:          rule.WebhookName(ruleName, "scale"),
		Path:          rule.Path(rule.Validating, ruleName, "scale"),
		Rules:         ScaleRules(),
		FailurePolicy: admissionregistrationv1.Ignore,
		FailurePolicyReason: "A Scale object carries no labels, so no objectSelector can narrow this webhook: it sees every scale request in the cluster, " +
			fmt.Sprintf("the HorizontalPodAutoscaler's included. Failing closed would let a Steward outage freeze autoscaling of every workload, %s-managed or not; ", tool) +
			"failing open only lets replica counts change while Steward is down.",
		TimeoutSeconds: 2,
		MatchConditions: []admissionregistrationv1.MatchCondition{{
			Name:       "not-" + strings.ToLower(strings.ReplaceAll(tool, " ", "")) + "-agent-or-kubernetes-controller",
			Expression: AllOf(IdentityClauses(agent)...),
		}},
	}
}
