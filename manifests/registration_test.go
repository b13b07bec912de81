package manifests

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/audit"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/rulessync"
)

// sampleRule is a rule that exists only here: nothing but its Spec tells
// the manifests about it.
type sampleRule struct{}

func (sampleRule) Handle(context.Context, *rule.Request) admission.Response {
	return admission.Allowed("")
}

func (sampleRule) Spec() rule.Spec {
	return rule.Spec{
		Name: "sample",
		Type: rule.Validating,
		Webhooks: []rule.Webhook{
			{
				Name:                rule.WebhookName("sample", ""),
				Path:                rule.Path(rule.Validating, "sample", ""),
				Rules:               []admissionregistrationv1.RuleWithOperations{widgets},
				FailurePolicy:       admissionregistrationv1.Fail,
				FailurePolicyReason: "widgets matter",
				TimeoutSeconds:      2,
				ObjectSelector:      &metav1.LabelSelector{MatchLabels: map[string]string{"example.org/managed": "true"}},
			},
			{
				Name:                rule.WebhookName("sample", "delete"),
				Path:                rule.Path(rule.Validating, "sample", "delete"),
				FailurePolicy:       admissionregistrationv1.Ignore,
				FailurePolicyReason: "deletes only warn",
				TimeoutSeconds:      1,
				DynamicRules:        &rule.DynamicRules{Configuration: Name, Guards: "widget kinds"},
			},
		},
		RBAC:            []rbacv1.PolicyRule{readWidgets},
		AggregatedRoles: []rule.AggregatedRole{{Name: "kinds", Label: "steward.dev/aggregate-to-sample"}},
	}
}

var (
	widgets = rule.Resources(rule.Operations(admissionregistrationv1.Create), []string{"example.org"}, []string{"v1"}, []string{"widgets"},
		admissionregistrationv1.NamespacedScope)
	readWidgets = rbacv1.PolicyRule{APIGroups: []string{"example.org"}, Resources: []string{"widgetdefinitions"}, Verbs: []string{"list", "watch"}}
)

// TestASpecAloneDeterminesTheRegistration proves that a rule's Spec is all
// the manifests need: a rule no other file knows renders into its webhook
// entries (names, paths, selectors, failure policies with their reasons,
// rules left to Steward for the dynamic entry), its RBAC (plus get and
// patch on the configuration its dynamic rules are applied to) and its
// aggregated ClusterRole, bound to Steward.
func TestASpecAloneDeterminesTheRegistration(t *testing.T) {
	in := install{ns: "steward-system", image: DefaultImage, name: Name}
	rules := []webhooks.Configured{{Rule: sampleRule{}, Mode: rule.Enforce}}

	configs := in.webhookConfigurations(rules)
	validating := configs[0].(*admissionregistrationv1.ValidatingWebhookConfiguration)
	mutating := configs[1].(*admissionregistrationv1.MutatingWebhookConfiguration)
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	equivalent, none := admissionregistrationv1.Equivalent, admissionregistrationv1.SideEffectClassNone
	port := int32(443)
	entry := func(name, path string, rules []admissionregistrationv1.RuleWithOperations, policy *admissionregistrationv1.FailurePolicyType, timeout int32, objects *metav1.LabelSelector) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name:         name,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "steward-system", Name: Name, Path: &path, Port: &port}},
			Rules:        rules, FailurePolicy: policy, MatchPolicy: &equivalent,
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: rule.NamespaceLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "steward-system"}},
			}},
			ObjectSelector: objects, SideEffects: &none, TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"},
		}
	}
	wantEntries := []admissionregistrationv1.ValidatingWebhook{
		entry("sample.steward.dev", "/validate/sample", []admissionregistrationv1.RuleWithOperations{widgets}, &fail, 2,
			&metav1.LabelSelector{MatchLabels: map[string]string{"example.org/managed": "true"}}),
		entry("sample-delete.steward.dev", "/validate/sample/delete", nil, &ignore, 1, &metav1.LabelSelector{}),
	}
	if diff := cmp.Diff(wantEntries, validating.Webhooks); diff != "" {
		t.Errorf("validating entries (-want +got):\n%s", diff)
	}
	wantReasons := map[string]string{
		"steward.dev/failure-policy-sample.steward.dev":        "Fail: widgets matter",
		"steward.dev/failure-policy-sample-delete.steward.dev": "Ignore: deletes only warn",
	}
	if diff := cmp.Diff(wantReasons, validating.Annotations); diff != "" {
		t.Errorf("failure policy reasons (-want +got):\n%s", diff)
	}
	if len(mutating.Webhooks) != 0 {
		t.Errorf("a validating rule got mutating entries: %v", mutating.Webhooks)
	}

	objs := in.baseRBAC(config.Defaults(webhooks.Sections()), rules)
	var roles []*rbacv1.ClusterRole
	var bindings []string
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			roles = append(roles, o)
		case *rbacv1.ClusterRoleBinding:
			bindings = append(bindings, o.RoleRef.Name+" to "+o.Subjects[0].Namespace+"/"+o.Subjects[0].Name)
		}
	}
	// The rule's own get, list, watch and patch of the configuration its
	// dynamic entry is in is the registration keeper's first grant.
	keep := rulessync.RBAC(in.registration())
	if !cmp.Equal(keep[0], rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"},
		ResourceNames: []string{Name}, Verbs: []string{"get", "list", "watch", "patch"}}) {
		t.Errorf("the registration keeper's first grant is %v", keep[0])
	}
	wantPolicy := append(append(append(append(append(webhooks.ClusterCacheRBAC(), webhooks.EventsRBAC(config.Defaults(webhooks.Sections()))...), audit.RBAC(config.Defaults(webhooks.Sections()).Audit)...), keep...), readWidgets), metricsAuthRules...)
	if diff := cmp.Diff(wantPolicy, roles[0].Rules); diff != "" {
		t.Errorf("Steward's ClusterRole (-want +got):\n%s", diff)
	}
	wantAggregated := &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"steward.dev/aggregate-to-sample": "true"}}}}
	if roles[1].Name != "steward-sample-kinds" || len(roles[1].Rules) != 0 || !cmp.Equal(wantAggregated, roles[1].AggregationRule) {
		t.Errorf("aggregated ClusterRole: %s with rules %v and aggregation %v; want steward-sample-kinds, empty, aggregating the rule's label", roles[1].Name, roles[1].Rules, roles[1].AggregationRule)
	}
	if diff := cmp.Diff([]string{"steward to steward-system/steward", "steward-sample-kinds to steward-system/steward"}, bindings); diff != "" {
		t.Errorf("bindings (-want +got):\n%s", diff)
	}
}
