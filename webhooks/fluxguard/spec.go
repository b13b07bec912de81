package fluxguard

import (
	"slices"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Spec registers fluxguard: webhooks for the objects a Kustomization
// applied and for those a HelmRelease installed (a label selector cannot
// say "either label"), each split by writer (gitops.ByWriter: people fail
// closed, service accounts open), one for the scale subresource, whose
// workloads are found in the owners' inventories, and one for the
// owners' records.
func (r *Rule) Spec() rule.Spec {
	return rule.Spec{
		Name: Name,
		Type: rule.Validating,
		Webhooks: slices.Concat(
			gitops.ByWriter(r.objectWebhook("", LabelKustomizationName, "kustomize-controller")),
			gitops.ByWriter(r.objectWebhook("helm", LabelHelmReleaseName, "helm-controller")),
			gitops.ByWriter(r.objectWebhook("generator", LabelArtifactGenerator, "source-watcher")),
			[]rule.Webhook{gitops.ScaleWebhook(Name, "Flux", r.guard.Agent()), gitops.RecordWebhook(Name, r.guard.Agent(), records)},
		),
		RBAC: rbac(),
	}
}

func (r *Rule) objectWebhook(suffix, label, controller string) rule.Webhook {
	return gitops.ObjectWebhook{
		Rule: Name, Suffix: suffix, Tool: "Flux", Label: label,
		Reach: "the objectSelector only sends objects carrying " + label + ", set by " + controller + ", and matchConditions keep Flux's controllers, the garbage collector, " +
			"the namespace controller and the other Kubernetes controllers away from Steward, so Flux's reconciles and namespace deletion keep working during an outage.",
		Condition: "not-flux-controller-lease-or-event", Agent: r.guard.Agent(),
	}.Webhook()
}

// Chart is what the Helm chart does with fluxguard's settings.
func (*Rule) Chart() rule.Chart {
	return rule.Chart{
		Lists: gitops.ChartLists(),
	}
}

// Monitoring is fluxguard's part of Steward's alerts and dashboard.
func (*Rule) Monitoring() rule.Monitoring {
	return rule.Monitoring{Unsynced: "fluxguard cannot tell whether an object's Kustomization or HelmRelease lists it, answers with an error, and the object webhooks' failure policy (Fail) refuses the write"}
}
