package rulessync

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/stewardhq/steward/webhooks/rule"
)

// source is a rule's changing rules, as DynamicRules reads them.
type source struct {
	rules   []admissionregistrationv1.RuleWithOperations
	ok      bool
	changed chan struct{}
}

func newSource(ok bool, rules ...admissionregistrationv1.RuleWithOperations) *source {
	return &source{rules: rules, ok: ok, changed: make(chan struct{}, 1)}
}

func (s *source) dynamic(op admissionregistrationv1.OperationType) *rule.DynamicRules {
	return &rule.DynamicRules{
		Configuration: "steward",
		Guards:        "sample kinds",
		Current: func() ([]admissionregistrationv1.RuleWithOperations, bool) {
			var out []admissionregistrationv1.RuleWithOperations
			for _, r := range s.rules {
				r = *r.DeepCopy()
				r.Operations = []admissionregistrationv1.OperationType{op}
				out = append(out, r)
			}
			return out, s.ok
		},
		Changed: s.changed,
	}
}

// dynamicSpec is a rule like claimguard: a create and a delete entry whose
// rules follow src, and a static entry between them.
func dynamicSpec(typ rule.Type, src *source) rule.Spec {
	return rule.Spec{Name: "sample", Type: typ, Webhooks: []rule.Webhook{
		{Name: rule.WebhookName("sample", ""), DynamicRules: src.dynamic(admissionregistrationv1.Create)},
		{Name: rule.WebhookName("sample", "managed"), Rules: []admissionregistrationv1.RuleWithOperations{
			rule.Resources(rule.Operations(admissionregistrationv1.Create), []string{"*"}, []string{"*"}, []string{"*"}, admissionregistrationv1.AllScopes)}},
		{Name: rule.WebhookName("sample", "delete"), DynamicRules: src.dynamic(admissionregistrationv1.Delete)},
	}}
}

func sampleRule(op admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	return rule.Resources(rule.Operations(op), []string{"example.org"}, []string{"*"}, []string{"widgets", "xwidgets"}, admissionregistrationv1.AllScopes)
}

// installed is a configuration as the installer applies it: the dynamic
// entries without rules, a caBundle cainjector wrote.
func installed(typ rule.Type, entries ...string) runtime.Object {
	none := admissionregistrationv1.SideEffectClassNone
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: []byte("ca-from-cainjector")}
	meta := metav1.ObjectMeta{Name: "steward"}
	if typ == rule.Mutating {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: meta}
		for _, e := range entries {
			c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{Name: e, ClientConfig: cc, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}})
		}
		return c
	}
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: meta}
	for _, e := range entries {
		c.Webhooks = append(c.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: e, ClientConfig: cc, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}})
	}
	return c
}

// live is what the syncer reads back: each entry's rules and caBundle,
// and the configuration's field managers.
type live struct {
	rules    map[string][]admissionregistrationv1.RuleWithOperations
	caBundle map[string]string
	managers []string
}

func readLive(t *testing.T, kube *fake.Clientset, typ rule.Type) live {
	t.Helper()
	ctx := context.Background()
	l := live{rules: map[string][]admissionregistrationv1.RuleWithOperations{}, caBundle: map[string]string{}}
	var fields []metav1.ManagedFieldsEntry
	if typ == rule.Mutating {
		c, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "steward", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, wh := range c.Webhooks {
			l.rules[wh.Name], l.caBundle[wh.Name] = wh.Rules, string(wh.ClientConfig.CABundle)
		}
		fields = c.ManagedFields
	} else {
		c, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "steward", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, wh := range c.Webhooks {
			l.rules[wh.Name], l.caBundle[wh.Name] = wh.Rules, string(wh.ClientConfig.CABundle)
		}
		fields = c.ManagedFields
	}
	for _, m := range fields {
		l.managers = append(l.managers, m.Manager)
	}
	return l
}

func TestRulesSyncerAppliesOnlyTheDynamicRules(t *testing.T) {
	for _, typ := range []rule.Type{rule.Validating, rule.Mutating} {
		t.Run(string(typ), func(t *testing.T) {
			ctx := context.Background()
			src := newSource(true, sampleRule(""))
			spec := dynamicSpec(typ, src)
			kube := fake.NewClientset(installed(typ, spec.Webhooks[0].Name, spec.Webhooks[1].Name, spec.Webhooks[2].Name))
			s := New(kube, []rule.Spec{spec}, logr.Discard())
			s.syncAll(ctx)

			got := readLive(t, kube, typ)
			want := map[string][]admissionregistrationv1.RuleWithOperations{
				"sample.steward.dev":         {sampleRule(admissionregistrationv1.Create)},
				"sample-managed.steward.dev": nil,
				"sample-delete.steward.dev":  {sampleRule(admissionregistrationv1.Delete)},
			}
			if diff := cmp.Diff(want, got.rules); diff != "" {
				t.Errorf("the dynamic entries get their source's rules, the static one keeps the installer's: -want, +got:\n%s", diff)
			}
			for entry, ca := range got.caBundle {
				if ca != "ca-from-cainjector" {
					t.Errorf("%s: caBundle changed to %q; only the rules are the syncer's", entry, ca)
				}
			}
			if !slices.Contains(got.managers, "steward-sample") {
				t.Errorf("field managers %v, want the rule's own, steward-sample", got.managers)
			}

			kube.ClearActions()
			s.syncAll(ctx)
			if writes := writesOf(kube.Actions()); len(writes) != 0 {
				t.Errorf("unchanged rules were written again: %v", writes)
			}

			src.rules = nil
			s.syncAll(ctx)
			if got := readLive(t, kube, typ).rules["sample.steward.dev"]; len(got) != 0 {
				t.Errorf("after the source dropped its kinds the entry still has rules %v", got)
			}
		})
	}
}

func TestRulesSyncerLeavesTheConfigurationAloneUntilItCan(t *testing.T) {
	spec := dynamicSpec(rule.Validating, newSource(true, sampleRule("")))
	tests := map[string]struct {
		reason string
		spec   rule.Spec
		objs   []runtime.Object
	}{
		"NoConfiguration": {
			reason: "the installer decides whether the configuration exists",
			spec:   spec,
		},
		"NoDeleteEntry": {
			reason: "applying a bare entry would fail validation; the installer decides whether the entries exist",
			spec:   spec,
			objs:   []runtime.Object{installed(rule.Validating, spec.Webhooks[0].Name, spec.Webhooks[1].Name)},
		},
		"SourceNotReady": {
			reason: "while the rule cannot tell its rules, the live ones stay as they are",
			spec:   dynamicSpec(rule.Validating, newSource(false)),
			objs:   []runtime.Object{installed(rule.Validating, spec.Webhooks[0].Name, spec.Webhooks[1].Name, spec.Webhooks[2].Name)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			kube := fake.NewClientset(tc.objs...)
			New(kube, []rule.Spec{tc.spec}, logr.Discard()).syncAll(context.Background())
			if writes := writesOf(kube.Actions()); len(writes) != 0 {
				t.Errorf("%s: the syncer wrote %v", tc.reason, writes)
			}
		})
	}
}

func TestRulesSyncerFollowsChanges(t *testing.T) {
	src := newSource(true, sampleRule(""))
	spec := dynamicSpec(rule.Validating, src)
	kube := fake.NewClientset()
	s := New(kube, []rule.Spec{spec}, logr.Discard())
	s.interval = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- s.Start(ctx) }()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
		}
	}
	// The first sync finds no configuration and leaves it to the installer.
	waitFor("the syncer did not look at the configuration when it started", func() bool { return len(kube.Actions()) > 0 })
	if err := kube.Tracker().Add(installed(rule.Validating, spec.Webhooks[0].Name, spec.Webhooks[1].Name, spec.Webhooks[2].Name)); err != nil {
		t.Fatal(err)
	}
	src.changed <- struct{}{}
	waitFor("a change of the rule's rules was not applied without waiting for the periodic sync", func() bool {
		return len(readLive(t, kube, rule.Validating).rules["sample.steward.dev"]) > 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v when stopped", err)
	}
}

func TestNewRulesSyncerIsNilWithoutDynamicRules(t *testing.T) {
	if s := New(fake.NewClientset(), []rule.Spec{{Name: "static", Webhooks: []rule.Webhook{{Name: "static.steward.dev"}}}}, logr.Discard()); s != nil {
		t.Errorf("rules without DynamicRules got a syncer with %d targets; nothing would ever be written", len(s.targets))
	}
}

func TestSameRules(t *testing.T) {
	want := []admissionregistrationv1.RuleWithOperations{sampleRule(admissionregistrationv1.Create), sampleRule(admissionregistrationv1.Delete)}
	noScope := []admissionregistrationv1.RuleWithOperations{*want[0].DeepCopy(), *want[1].DeepCopy()}
	noScope[0].Scope = nil
	tests := map[string]struct {
		reason     string
		live, want []admissionregistrationv1.RuleWithOperations
		same       bool
	}{
		"Equal":          {reason: "equal rules compare equal", live: want, want: want, same: true},
		"DefaultScope":   {reason: "a missing scope is the API server's default (*)", live: noScope, want: want, same: true},
		"Fewer":          {reason: "a missing rule is a difference", live: want[:1], want: want},
		"OtherOperation": {reason: "rules of another operation differ", live: want[1:], want: want[:1]},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := sameRules(tc.live, tc.want); got != tc.same {
				t.Errorf("%s: sameRules = %v", tc.reason, got)
			}
		})
	}
}

func TestPolicyRulesGrantWhatDynamicRulesNeed(t *testing.T) {
	read := rbacv1.PolicyRule{APIGroups: []string{"example.org"}, Resources: []string{"widgetdefinitions"}, Verbs: []string{"list", "watch"}}
	tests := map[string]struct {
		reason string
		spec   rule.Spec
		want   []rbacv1.PolicyRule
	}{
		"StaticRules": {
			reason: "a rule without dynamic entries gets its RBAC, nothing more",
			spec:   rule.Spec{Type: rule.Validating, RBAC: []rbacv1.PolicyRule{read}, Webhooks: []rule.Webhook{{Name: "a"}}},
			want:   []rbacv1.PolicyRule{read},
		},
		"DynamicValidatingRules": {
			reason: "get, list, watch and patch on the one configuration holding the dynamic entries, by name, once",
			spec:   rule.Spec{Type: rule.Validating, RBAC: []rbacv1.PolicyRule{read}, Webhooks: dynamicSpec(rule.Validating, newSource(true)).Webhooks},
			want: []rbacv1.PolicyRule{read, {APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"},
				ResourceNames: []string{"steward"}, Verbs: []string{"get", "list", "watch", "patch"}}},
		},
		"DynamicMutatingRules": {
			reason: "a mutating rule's entries live in the mutating configuration",
			spec:   rule.Spec{Type: rule.Mutating, Webhooks: dynamicSpec(rule.Mutating, newSource(true)).Webhooks},
			want: []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations"},
				ResourceNames: []string{"steward"}, Verbs: []string{"get", "list", "watch", "patch"}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.spec.PolicyRules()); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func writesOf(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a.GetVerb())
		}
	}
	return out
}
