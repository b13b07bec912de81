package claimguard

import (
	"context"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/stewardhq/steward/webhooks/rule"
)

// installed is Steward's configuration as the installer applies it: the
// claimguard entries without rules, a caBundle cainjector wrote.
func installed(entries ...string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "steward"}}
	for _, e := range entries {
		c.Webhooks = append(c.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name:                    e,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{CABundle: []byte("ca-from-cainjector")},
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		})
	}
	return c
}

func TestRulesSyncer(t *testing.T) {
	ctx := context.Background()
	withPG := newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced).managed(rdsGK, rdsGVR, false, stateSynced)
	scope := admissionregistrationv1.AllScopes
	pgRules := func(op admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{op}, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"database.example.org"}, APIVersions: []string{"*"}, Resources: []string{"postgresqlinstances", "xpostgresqlinstances"}, Scope: &scope}}}
	}

	t.Run("AppliesRulesForTheXRDsKindsAndLeavesTheRestAlone", func(t *testing.T) {
		kube := fake.NewClientset(installed(rule.WebhookName(Name, createSuffix), rule.WebhookName(Name, managedSuffix), rule.WebhookName(Name, deleteSuffix)))
		s := &rulesSyncer{rule: withPG.defaults(), log: logr.Discard(), kube: kube}
		if err := s.sync(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "steward", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			entry string
			want  []admissionregistrationv1.RuleWithOperations
		}{{rule.WebhookName(Name, createSuffix), pgRules(admissionregistrationv1.Create)}, {rule.WebhookName(Name, deleteSuffix), pgRules(admissionregistrationv1.Delete)}, {rule.WebhookName(Name, managedSuffix), nil}} {
			wh := findWebhook(got, tc.entry)
			if diff := cmp.Diff(tc.want, wh.Rules); diff != "" {
				t.Errorf("rules of %s: -want, +got:\n%s", tc.entry, diff)
			}
			if string(wh.ClientConfig.CABundle) != "ca-from-cainjector" {
				t.Errorf("%s: caBundle changed to %q; only the rules are claimguard's", tc.entry, wh.ClientConfig.CABundle)
			}
		}
		var managers []string
		for _, m := range got.ManagedFields {
			managers = append(managers, m.Manager)
		}
		if !slices.Contains(managers, FieldManager) {
			t.Errorf("field managers %v, want one named %s", managers, FieldManager)
		}

		kube.ClearActions()
		if err := s.sync(ctx); err != nil {
			t.Fatal(err)
		}
		if writes := writesOf(kube.Actions()); len(writes) != 0 {
			t.Errorf("unchanged rules were written again: %v", writes)
		}

		s.rule.snap.Store(newSnapshot())
		if err := s.sync(ctx); err != nil {
			t.Fatal(err)
		}
		got, _ = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "steward", metav1.GetOptions{})
		if rules := findWebhook(got, rule.WebhookName(Name, createSuffix)).Rules; len(rules) != 0 {
			t.Errorf("after the XRD went away the create entry still has rules %v", rules)
		}
	})

	t.Run("MissingConfigurationOrEntryIsNotCreated", func(t *testing.T) {
		for name, objs := range map[string][]*admissionregistrationv1.ValidatingWebhookConfiguration{
			"no configuration": nil,
			"no delete entry":  {installed(rule.WebhookName(Name, createSuffix), rule.WebhookName(Name, managedSuffix))},
		} {
			var kube *fake.Clientset
			if objs == nil {
				kube = fake.NewClientset()
			} else {
				kube = fake.NewClientset(objs[0])
			}
			s := &rulesSyncer{rule: withPG.defaults(), log: logr.Discard(), kube: kube}
			if err := s.sync(ctx); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			if writes := writesOf(kube.Actions()); len(writes) != 0 {
				t.Errorf("%s: claimguard wrote %v; the installer decides whether its entries exist", name, writes)
			}
		}
	})
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
