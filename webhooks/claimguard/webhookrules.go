package claimguard

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stewardhq/steward/webhooks/rule"
)

// webhookRules returns the rules the create and delete entries should have
// for the current snapshot: every served claim and composite resource of
// each XRD whose composite cache has synced. A kind joins the rules only
// once claimguard can answer for it, so a new XRD never sends requests to
// an unsynced cache; kinds Steward may not list stay out (and are logged).
func webhookRules(s *snapshot, op admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	if s == nil {
		return nil
	}
	byGroup := map[string][]string{}
	for gk, x := range s.xrds {
		w := s.composites[gk]
		if w == nil || w.state() != stateSynced {
			continue
		}
		if s.served[x.compositeGR()] {
			byGroup[x.group] = append(byGroup[x.group], x.compositePlural)
		}
		if x.claimKind != "" && s.served[x.claimGR()] {
			byGroup[x.group] = append(byGroup[x.group], x.claimPlural)
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var out []admissionregistrationv1.RuleWithOperations
	scope := admissionregistrationv1.AllScopes
	for _, g := range groups {
		res := byGroup[g]
		sort.Strings(res)
		out = append(out, admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{op},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{g},
				APIVersions: []string{"*"},
				Resources:   res,
				Scope:       &scope,
			},
		})
	}
	return out
}

// rulesSyncer keeps the rules of claimguard's create and delete entries in
// Steward's ValidatingWebhookConfiguration equal to webhookRules, with
// server-side apply under FieldManager. It owns nothing but those two rules
// lists (webhooks is a list keyed by name, rules an atomic list), so it
// never touches the caBundle cert-manager's cainjector (or Steward's own
// certificate manager) writes, nor what the installer applied. It runs on
// the leader only; without leader election every replica runs it, which is
// also safe: each computes the same rules from the same XRDs, applies only
// when the live rules differ, and an apply of unchanged content is a no-op.
type rulesSyncer struct {
	rule     *Rule
	log      logr.Logger
	kube     kubernetes.Interface
	interval time.Duration
	warned   string
}

// NeedLeaderElection is true: one writer at a time when Steward runs with
// leader election.
func (s *rulesSyncer) NeedLeaderElection() bool { return true }

// Start syncs on every snapshot change and periodically, so rules reset by
// someone else (an installer re-applying its manifest) are restored.
func (s *rulesSyncer) Start(ctx context.Context) error {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		if s.rule.ready.Load() {
			if err := s.sync(ctx); err != nil && ctx.Err() == nil {
				s.log.Error(err, "could not update the webhook rules for claim and composite resource kinds")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.rule.rulesChanged:
		case <-t.C:
		}
	}
}

func (s *rulesSyncer) sync(ctx context.Context) error {
	snap := s.rule.snap.Load()
	if snap == nil {
		return nil
	}
	name := s.rule.cfg.WebhookConfigurationName
	client := s.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	live, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			s.warnOnce(fmt.Sprintf("ValidatingWebhookConfiguration %s not found", name))
			return nil
		}
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", name, err)
	}
	want := map[string][]admissionregistrationv1.RuleWithOperations{
		rule.WebhookName(Name, createSuffix): webhookRules(snap, admissionregistrationv1.Create),
		rule.WebhookName(Name, deleteSuffix): webhookRules(snap, admissionregistrationv1.Delete),
	}
	same := true
	for entry, rules := range want {
		wh := findWebhook(live, entry)
		if wh == nil {
			// Applying a bare entry would fail validation anyway; the
			// installer decides whether claimguard's entries exist.
			s.warnOnce(fmt.Sprintf("ValidatingWebhookConfiguration %s has no entry %s", name, entry))
			return nil
		}
		if !sameRules(wh.Rules, rules) {
			same = false
		}
	}
	if same {
		return nil
	}
	ac := admissionregistrationv1ac.ValidatingWebhookConfiguration(name)
	for _, entry := range []string{rule.WebhookName(Name, createSuffix), rule.WebhookName(Name, deleteSuffix)} {
		wh := admissionregistrationv1ac.ValidatingWebhook().WithName(entry)
		for _, r := range want[entry] {
			wh.WithRules(admissionregistrationv1ac.RuleWithOperations().
				WithOperations(r.Operations...).
				WithAPIGroups(r.APIGroups...).
				WithAPIVersions(r.APIVersions...).
				WithResources(r.Resources...).
				WithScope(*r.Scope))
		}
		ac.WithWebhooks(wh)
	}
	if _, err := client.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("applying rules to ValidatingWebhookConfiguration %s: %w", name, err)
	}
	s.log.Info("updated webhook rules for claim and composite resource kinds", "configuration", name, "rules", describeRules(want[rule.WebhookName(Name, createSuffix)]))
	return nil
}

func (s *rulesSyncer) warnOnce(msg string) {
	if s.warned != msg {
		s.warned = msg
		s.log.Info(msg + "; claim and composite resource kinds are not guarded until it exists")
	}
}

func findWebhook(c *admissionregistrationv1.ValidatingWebhookConfiguration, name string) *admissionregistrationv1.ValidatingWebhook {
	for i := range c.Webhooks {
		if c.Webhooks[i].Name == name {
			return &c.Webhooks[i]
		}
	}
	return nil
}

// sameRules compares rules as the API server stores them (scope defaulted).
func sameRules(live, want []admissionregistrationv1.RuleWithOperations) bool {
	if len(live) != len(want) {
		return false
	}
	norm := func(r admissionregistrationv1.RuleWithOperations) admissionregistrationv1.RuleWithOperations {
		r = *r.DeepCopy()
		if r.Scope == nil {
			s := admissionregistrationv1.AllScopes
			r.Scope = &s
		}
		return r
	}
	for i := range live {
		if !reflect.DeepEqual(norm(live[i]), norm(want[i])) {
			return false
		}
	}
	return true
}

func describeRules(rules []admissionregistrationv1.RuleWithOperations) []string {
	var out []string
	for _, r := range rules {
		for _, res := range r.Resources {
			out = append(out, res+"."+r.APIGroups[0])
		}
	}
	return out
}
