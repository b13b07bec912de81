package rule

import (
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Target says where the API server reaches Steward.
type Target struct {
	// Namespace is Steward's own namespace; it is never matched.
	Namespace string
	// Service is the name of the Service in front of Steward (port 443).
	Service string
	// URL, when set, is where the API server reaches Steward instead of
	// the Service ("https://host:port"; each webhook adds its path): for
	// a Steward the API server dials directly, outside the cluster's
	// Service network.
	URL string
}

// NamespaceLabel is the label the API server puts on every namespace with
// the namespace's own name, so selectors can exclude namespaces by name.
const NamespaceLabel = "kubernetes.io/metadata.name"

// ExcludedNamespaces are never sent to Steward: a webhook that guards its own
// namespace, or kube-system, can block its own recovery.
func (t Target) ExcludedNamespaces() []string {
	return []string{"kube-system", t.Namespace}
}

// ValidatingWebhook renders one webhook entry of a validating configuration.
func (w Webhook) ValidatingWebhook(t Target) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    w.Name,
		ClientConfig:            w.clientConfig(t),
		Rules:                   w.Rules,
		FailurePolicy:           ptr.To(w.FailurePolicy),
		MatchPolicy:             ptr.To(w.matchPolicy()),
		NamespaceSelector:       w.namespaceSelector(t),
		ObjectSelector:          w.objectSelector(),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To(w.TimeoutSeconds),
		AdmissionReviewVersions: []string{"v1"},
		MatchConditions:         w.MatchConditions,
	}
}

// MutatingWebhook renders one webhook entry of a mutating configuration.
func (w Webhook) MutatingWebhook(t Target) admissionregistrationv1.MutatingWebhook {
	reinvocation := w.ReinvocationPolicy
	if reinvocation == "" {
		reinvocation = admissionregistrationv1.NeverReinvocationPolicy
	}
	v := w.ValidatingWebhook(t)
	return admissionregistrationv1.MutatingWebhook{
		Name:                    v.Name,
		ClientConfig:            v.ClientConfig,
		Rules:                   v.Rules,
		FailurePolicy:           v.FailurePolicy,
		MatchPolicy:             v.MatchPolicy,
		NamespaceSelector:       v.NamespaceSelector,
		ObjectSelector:          v.ObjectSelector,
		SideEffects:             v.SideEffects,
		TimeoutSeconds:          v.TimeoutSeconds,
		AdmissionReviewVersions: v.AdmissionReviewVersions,
		ReinvocationPolicy:      &reinvocation,
		MatchConditions:         v.MatchConditions,
	}
}

func (w Webhook) clientConfig(t Target) admissionregistrationv1.WebhookClientConfig {
	if t.URL != "" {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(strings.TrimSuffix(t.URL, "/") + w.Path)}
	}
	return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: t.Namespace,
		Name:      t.Service,
		Path:      ptr.To(w.Path),
		Port:      ptr.To(int32(443)),
	}}
}

func (w Webhook) matchPolicy() admissionregistrationv1.MatchPolicyType {
	if w.MatchPolicy == "" {
		return admissionregistrationv1.Equivalent
	}
	return w.MatchPolicy
}

// namespaceSelector adds the excluded namespaces to the rule's own selector.
func (w Webhook) namespaceSelector(t Target) *metav1.LabelSelector {
	sel := &metav1.LabelSelector{}
	if w.NamespaceSelector != nil {
		sel = w.NamespaceSelector.DeepCopy()
	}
	sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
		Key:      NamespaceLabel,
		Operator: metav1.LabelSelectorOpNotIn,
		Values:   slices.Clone(t.ExcludedNamespaces()),
	})
	return sel
}

func (w Webhook) objectSelector() *metav1.LabelSelector {
	if w.ObjectSelector == nil {
		return &metav1.LabelSelector{}
	}
	return w.ObjectSelector.DeepCopy()
}
