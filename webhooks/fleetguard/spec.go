package fleetguard

import (
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
		Webhooks: append(gitops.ByWriter(r.mainWebhook()), gitops.ScaleWebhook(Name, "Fleet", r.guard.Agent())),
		RBAC:     scaleRBAC(),
	}
}

func (r *Rule) mainWebhook() rule.Webhook {
	return gitops.ObjectWebhook{
		Rule: Name, Tool: "Fleet", Label: LabelHash,
		Reach: "the objectSelector only sends objects carrying Fleet's label, and matchConditions keep the Fleet agent, the garbage collector, " +
			"the namespace controller and the other Kubernetes controllers away from Steward, so deployments by Fleet and namespace deletion keep working during an outage.",
		Condition: "not-agent-controller-lease-event-or-owned", Agent: r.guard.Agent(), Exclude: []string{excludeAppliedWithOwner},
	}.Webhook()
}

// excludeAppliedWithOwner skips objects whose object set has an owner
// (Rancher's and Fleet's controllers apply their own objects that way),
// unless an update removes the owner: only requests in which every object
// present has the annotation are skipped.
const excludeAppliedWithOwner = `!(
  (object == null || (has(object.metadata) && has(object.metadata.annotations) && 'objectset.rio.cattle.io/owner-gvk' in object.metadata.annotations)) &&
  (oldObject == null || (has(oldObject.metadata) && has(oldObject.metadata.annotations) && 'objectset.rio.cattle.io/owner-gvk' in oldObject.metadata.annotations)))`

// Chart is what the Helm chart does with fleetguard's settings.
func (*Rule) Chart() rule.Chart {
	return rule.Chart{
		Lists: gitops.ChartLists(),
	}
}
