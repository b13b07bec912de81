package main

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fleetguardWebhook is the name of the fleetguard entry whose registration
// the policy copies.
const fleetguardWebhook = "fleetguard.steward.dev"

// policyExpression is fleetguard's core decision in CEL, as a platform team
// would write it without Steward: of a Fleet-managed object, anyone the
// match conditions let through (everyone but the Fleet agent and
// Kubernetes' controllers) may only make updates that leave its labels,
// spec and data alone (status, finalizers and other metadata). Creates
// carrying Fleet's label (ownership spoofing) and deletes are refused.
const policyExpression = `request.operation == 'UPDATE' &&
  object.metadata.?labels.orValue({}) == oldObject.metadata.?labels.orValue({}) &&
  object.?spec.orValue({}) == oldObject.?spec.orValue({}) &&
  object.?data.orValue({}) == oldObject.?data.orValue({}) &&
  object.?binaryData.orValue({}) == oldObject.?binaryData.orValue({})`

const policyMessage = `'fleetguard policy: ' + request.kind.kind + ' ' + request.namespace + '/' + request.name +
  ' is managed by Fleet; change it in the Git repository instead'`

// fleetPolicy builds the ValidatingAdmissionPolicy equivalent of
// fleetguard, matched exactly as fleetguard's webhook is (rules, selectors
// and match conditions copied from Steward's registration), and its
// binding.
func fleetPolicy(steward stewardWebhooks) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	var fg *admissionregistrationv1.ValidatingWebhook
	if steward.validating != nil {
		for i := range steward.validating.Webhooks {
			if steward.validating.Webhooks[i].Name == fleetguardWebhook {
				fg = &steward.validating.Webhooks[i]
			}
		}
	}
	if fg == nil {
		return nil, nil, fmt.Errorf("steward's configuration has no %s entry to model the policy on", fleetguardWebhook)
	}
	var rules []admissionregistrationv1.NamedRuleWithOperations
	for _, r := range fg.Rules {
		rules = append(rules, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: r})
	}
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: fg.NamespaceSelector,
				ObjectSelector:    fg.ObjectSelector,
				ResourceRules:     rules,
				MatchPolicy:       fg.MatchPolicy,
			},
			MatchConditions: fg.MatchConditions,
			Validations: []admissionregistrationv1.Validation{{
				Expression:        policyExpression,
				MessageExpression: policyMessage,
				// 403, as a webhook's denial.
				Reason: ptr(metav1.StatusReasonForbidden),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding, nil
}
