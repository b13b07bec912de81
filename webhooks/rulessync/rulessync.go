// Package rulessync keeps the rules of webhook entries that follow the
// cluster (rule.DynamicRules) in the live webhook configurations: rules
// for kinds that exist only once a CRD or a Crossplane XRD defines them,
// which no manifest can list. It is registration, not the rule contract,
// and runs beside the webhook server.
package rulessync

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks/rule"
)

// rulesSyncInterval is how often the dynamic rules are re-checked without
// a change from their rules.
const rulesSyncInterval = 30 * time.Second

// Syncer keeps the rules of every webhook entry with DynamicRules in
// the live webhook configurations equal to what the entry's rule says,
// with server-side apply under the rule's FieldManager. It owns nothing
// but those rules lists (webhooks is a list keyed by name, rules an atomic
// list), so it never touches the caBundle cert-manager's cainjector (or
// Steward's own certificate manager) writes, nor what the installer
// applied. It runs on every replica, which is safe without electing a
// writer: each computes the same rules from the same cluster, applies
// only when the live rules differ, and an apply of unchanged content is a
// no-op. (Only while replicas of two versions that compute different
// rules run side by side, during a rollout, may each restore its own.)
type Syncer struct {
	targets  []*rulesTarget
	interval time.Duration
}

// rulesTarget is one rule's entries with DynamicRules in one webhook
// configuration: what one apply writes.
type rulesTarget struct {
	rule          string
	typ           rule.Type
	configuration string
	guards        string
	entries       []rule.Webhook
	kube          kubernetes.Interface
	log           logr.Logger
	warned        string
}

// New gathers the entries with DynamicRules of specs; it
// returns nil when there are none. log is named after each rule.
func New(kube kubernetes.Interface, specs []rule.Spec, log logr.Logger) *Syncer {
	s := &Syncer{interval: rulesSyncInterval}
	for _, spec := range specs {
		byConfiguration := map[string]*rulesTarget{}
		for _, wh := range spec.Webhooks {
			d := wh.DynamicRules
			if d == nil {
				continue
			}
			t := byConfiguration[d.Configuration]
			if t == nil {
				t = &rulesTarget{rule: spec.Name, typ: spec.Type, configuration: d.Configuration, guards: d.Guards,
					kube: kube, log: log.WithName(spec.Name).WithName("webhook-rules")}
				byConfiguration[d.Configuration] = t
				s.targets = append(s.targets, t)
			}
			t.entries = append(t.entries, wh)
		}
	}
	if len(s.targets) == 0 {
		return nil
	}
	return s
}

// Add adds a Syncer for specs to the manager, if any entry
// has DynamicRules. Nothing talks to the cluster until the manager starts.
func Add(mgr manager.Manager, specs []rule.Spec) error {
	// The client shares the manager's connections to the API server.
	kube, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("webhook rules syncer: kubernetes client: %w", err)
	}
	s := New(kube, specs, mgr.GetLogger())
	if s == nil {
		return nil
	}
	if err := mgr.Add(s); err != nil {
		return fmt.Errorf("adding the webhook rules syncer: %w", err)
	}
	return nil
}

// NeedLeaderElection is false: every replica keeps the rules (see
// Syncer), so keeping the webhooks' rules never waits on an
// election.
func (s *Syncer) NeedLeaderElection() bool { return false }

// Start syncs on every change of any entry's rules and periodically.
func (s *Syncer) Start(ctx context.Context) error {
	kick := make(chan struct{}, 1)
	var watched []<-chan struct{}
	for _, t := range s.targets {
		for _, wh := range t.entries {
			if ch := wh.DynamicRules.Changed; ch != nil && !slices.Contains(watched, ch) {
				watched = append(watched, ch)
				go forward(ctx, ch, kick)
			}
		}
	}
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	for {
		s.syncAll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-tick.C:
		}
	}
}

// forward passes each signal of from to kick, without blocking.
func forward(ctx context.Context, from <-chan struct{}, kick chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-from:
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	}
}

// syncAll brings every target up to date once, logging what fails.
func (s *Syncer) syncAll(ctx context.Context) {
	for _, t := range s.targets {
		if err := t.sync(ctx); err != nil && ctx.Err() == nil {
			t.log.Error(err, "could not update the webhook rules for "+t.guards)
		}
	}
}

func (t *rulesTarget) sync(ctx context.Context) error {
	want := map[string][]admissionregistrationv1.RuleWithOperations{}
	for _, wh := range t.entries {
		rules, ok := wh.DynamicRules.Current()
		if !ok {
			return nil
		}
		want[wh.Name] = rules
	}
	kind := t.typ.ConfigurationKind()
	live, err := t.liveRules(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) {
			t.warnOnce(fmt.Sprintf("%s %s not found", kind, t.configuration))
			return nil
		}
		return fmt.Errorf("reading %s %s: %w", kind, t.configuration, err)
	}
	same := true
	for _, wh := range t.entries {
		rules, ok := live[wh.Name]
		if !ok {
			// Applying a bare entry would fail validation anyway; the
			// installer decides whether the rule's entries exist.
			t.warnOnce(fmt.Sprintf("%s %s has no entry %s", kind, t.configuration, wh.Name))
			return nil
		}
		if !sameRules(rules, want[wh.Name]) {
			same = false
		}
	}
	if same {
		return nil
	}
	if err := t.apply(ctx, want); err != nil {
		return fmt.Errorf("applying rules to %s %s: %w", kind, t.configuration, err)
	}
	t.log.Info("updated webhook rules for "+t.guards, "configuration", t.configuration, "rules", t.describe(want))
	return nil
}

func (t *rulesTarget) warnOnce(msg string) {
	if t.warned != msg {
		t.warned = msg
		t.log.Info(msg + "; " + t.guards + " are not guarded until it exists")
	}
}

// liveRules reads the rules of every entry of the live configuration.
func (t *rulesTarget) liveRules(ctx context.Context) (map[string][]admissionregistrationv1.RuleWithOperations, error) {
	out := map[string][]admissionregistrationv1.RuleWithOperations{}
	api := t.kube.AdmissionregistrationV1()
	if t.typ == rule.Mutating {
		c, err := api.MutatingWebhookConfigurations().Get(ctx, t.configuration, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		for _, wh := range c.Webhooks {
			out[wh.Name] = wh.Rules
		}
		return out, nil
	}
	c, err := api.ValidatingWebhookConfigurations().Get(ctx, t.configuration, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	for _, wh := range c.Webhooks {
		out[wh.Name] = wh.Rules
	}
	return out, nil
}

// apply writes the name and rules of each entry, nothing else.
func (t *rulesTarget) apply(ctx context.Context, want map[string][]admissionregistrationv1.RuleWithOperations) error {
	opts := metav1.ApplyOptions{FieldManager: rule.FieldManager(t.rule), Force: true}
	api := t.kube.AdmissionregistrationV1()
	if t.typ == rule.Mutating {
		ac := admissionregistrationv1ac.MutatingWebhookConfiguration(t.configuration)
		for _, wh := range t.entries {
			ac.WithWebhooks(admissionregistrationv1ac.MutatingWebhook().WithName(wh.Name).WithRules(applyRules(want[wh.Name])...))
		}
		_, err := api.MutatingWebhookConfigurations().Apply(ctx, ac, opts)
		return err
	}
	ac := admissionregistrationv1ac.ValidatingWebhookConfiguration(t.configuration)
	for _, wh := range t.entries {
		ac.WithWebhooks(admissionregistrationv1ac.ValidatingWebhook().WithName(wh.Name).WithRules(applyRules(want[wh.Name])...))
	}
	_, err := api.ValidatingWebhookConfigurations().Apply(ctx, ac, opts)
	return err
}

func applyRules(rules []admissionregistrationv1.RuleWithOperations) []*admissionregistrationv1ac.RuleWithOperationsApplyConfiguration {
	var out []*admissionregistrationv1ac.RuleWithOperationsApplyConfiguration
	for _, r := range rules {
		ac := admissionregistrationv1ac.RuleWithOperations().
			WithOperations(r.Operations...).
			WithAPIGroups(r.APIGroups...).
			WithAPIVersions(r.APIVersions...).
			WithResources(r.Resources...)
		if r.Scope != nil {
			ac.WithScope(*r.Scope)
		}
		out = append(out, ac)
	}
	return out
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

// describe lists the resources the entries' rules name, once each, as
// "resource.group".
func (t *rulesTarget) describe(want map[string][]admissionregistrationv1.RuleWithOperations) []string {
	var out []string
	for _, wh := range t.entries {
		for _, r := range want[wh.Name] {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if d := res + "." + g; !slices.Contains(out, d) {
						out = append(out, d)
					}
				}
			}
		}
	}
	return out
}
