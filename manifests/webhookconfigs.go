package manifests

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/rule"
)

// failurePolicyAnnotation records, next to each webhook, why its failure
// policy was chosen, so an operator reading the live object sees the reason.
const failurePolicyAnnotation = "steward.dev/failure-policy-"

// webhookConfigurations renders one validating and one mutating
// configuration, both named after the install ("steward"), from the rule
// list.
func (in install) webhookConfigurations(rules []webhooks.Configured) []any {
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: in.name, Labels: in.labels(), Annotations: map[string]string{}},
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: in.name, Labels: in.labels(), Annotations: map[string]string{}},
	}
	for _, c := range rules {
		spec := c.Rule.Spec()
		for _, wh := range spec.Webhooks {
			reason := fmt.Sprintf("%s: %s", wh.FailurePolicy, wh.FailurePolicyReason)
			switch spec.Type {
			case rule.Validating:
				validating.Webhooks = append(validating.Webhooks, wh.ValidatingWebhook(in.target()))
				validating.Annotations[failurePolicyAnnotation+wh.Name] = reason
			case rule.Mutating:
				mutating.Webhooks = append(mutating.Webhooks, wh.MutatingWebhook(in.target()))
				mutating.Annotations[failurePolicyAnnotation+wh.Name] = reason
			}
		}
	}
	return []any{validating, mutating}
}
