package fluxguard

import (
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
			[]rule.Webhook{gitops.ScaleWebhook(Name, "Flux", r.agent), gitops.RecordWebhook(Name, r.agent, records)},
		),
		RBAC:       rbac(),
		ChartLists: []rule.ChartList{{Key: "agentUsers", OmitWhenEmpty: true}, {Key: "agentGroups", OmitWhenEmpty: true}},
		Monitoring: rule.Monitoring{Unsynced: "fluxguard cannot tell whether an object's Kustomization or HelmRelease lists it, answers with an error, and the object webhooks' failure policy (Fail) refuses the write"},
	}
}

func (r *Rule) objectWebhook(suffix, label, controller string) rule.Webhook {
	return rule.Webhook{
		Name:          rule.WebhookName(Name, suffix),
		Path:          rule.Path(rule.Validating, Name, suffix),
		Rules:         gitops.ObjectRules(),
		FailurePolicy: admissionregistrationv1.Fail,
		FailurePolicyReason: "A guard that fails open is a silent bypass: while Steward is unreachable, hand edits of Flux-managed objects would go through unrecorded. " +
			"The blast radius is small: the objectSelector only sends objects carrying " + label + ", set by " + controller + ", and matchConditions keep Flux's controllers, the garbage collector, " +
			"the namespace controller and the other Kubernetes controllers away from Steward, so Flux's reconciles and namespace deletion keep working during an outage.",
		TimeoutSeconds: 3,
		// For UPDATE and DELETE the API server matches the selector against
		// the old object too, so removing the label still reaches Steward.
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: label, Operator: metav1.LabelSelectorOpExists},
		}},
		MatchConditions: []admissionregistrationv1.MatchCondition{{
			Name:       "not-flux-controller-lease-or-event",
			Expression: gitops.AllOf(append(gitops.IdentityClauses(r.agent), gitops.ExcludedResources, gitops.ExcludeStatusKeepingMetadata())...),
		}},
	}
}
