package fleetguard

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Name is the rule's name: its config key, metric label and log field.
const Name = "fleetguard"

// Spec registers fleetguard: one webhook for every labelled object, and
// one for the scale subresource of the workloads Fleet commonly deploys,
// whose metadata it reads.
func (r *Rule) Spec() rule.Spec {
	return rule.Spec{
		Name:     Name,
		Type:     rule.Validating,
		Webhooks: append(gitops.ByWriter(r.mainWebhook()), gitops.ScaleWebhook(Name, "Fleet", r.agent)),
		RBAC:     scaleRBAC(),
		// The agent's identities are the main webhook's matchCondition; it
		// leaves a clause out for an empty list.
		ChartLists: []rule.ChartList{{Key: "agentUsers", OmitWhenEmpty: true}, {Key: "agentGroups", OmitWhenEmpty: true}},
	}
}

func (r *Rule) mainWebhook() rule.Webhook {
	return rule.Webhook{
		Name:          rule.WebhookName(Name, ""),
		Path:          rule.Path(rule.Validating, Name, ""),
		Rules:         gitops.ObjectRules(),
		FailurePolicy: admissionregistrationv1.Fail,
		FailurePolicyReason: "A guard that fails open is a silent bypass: while Steward is unreachable, hand edits of Fleet-managed objects would go through unrecorded. " +
			"The blast radius is small: the objectSelector only sends objects carrying Fleet's label, and matchConditions keep the Fleet agent, the garbage collector, " +
			"the namespace controller and the other Kubernetes controllers away from Steward, so deployments by Fleet and namespace deletion keep working during an outage.",
		TimeoutSeconds: 3,
		// For UPDATE and DELETE the API server matches the selector against
		// the old object too, so removing the label still reaches Steward.
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: LabelHash, Operator: metav1.LabelSelectorOpExists},
		}},
		MatchConditions: []admissionregistrationv1.MatchCondition{{
			Name:       "not-agent-controller-lease-event-or-owned",
			Expression: gitops.AllOf(append(gitops.IdentityClauses(r.agent), gitops.ExcludedResources, excludeAppliedWithOwner, gitops.ExcludeStatusKeepingMetadata())...),
		}},
	}
}

// excludeAppliedWithOwner skips objects whose object set has an owner
// (Rancher's and Fleet's controllers apply their own objects that way),
// unless an update removes the owner: only requests in which every object
// present has the annotation are skipped.
const excludeAppliedWithOwner = `!(
  (object == null || (has(object.metadata) && has(object.metadata.annotations) && 'objectset.rio.cattle.io/owner-gvk' in object.metadata.annotations)) &&
  (oldObject == null || (has(oldObject.metadata) && has(oldObject.metadata.annotations) && 'objectset.rio.cattle.io/owner-gvk' in oldObject.metadata.annotations)))`
