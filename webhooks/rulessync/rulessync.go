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

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

// rulesSyncInterval is how often the dynamic rules are re-checked without
// a change from their rules.
const rulesSyncInterval = 30 * time.Second

// Syncer keeps Steward's registration: with a Registration (Options.Keep),
// its two webhook configurations as a whole (keeper), and always the
// rules of every webhook entry with DynamicRules equal to what the entry's
// rule says, with server-side apply under the rule's FieldManager. The
// rules' managers own nothing but those rules lists (webhooks is a list
// keyed by name, rules an atomic list), and Steward's own manager
// (FieldManager) owns every other field it renders except the caBundle,
// so neither touches the caBundle cert-manager's cainjector (or Steward's
// own certificate manager) writes.
//
// It learns of changes from a watch of the two configurations, by name,
// through the cluster cache, and from the rules' Changed channels; at rest
// it makes no API call. With an Election only the replica holding its
// Lease writes: replicas of two versions that render differently (a
// rolling upgrade), or that reloaded a changed configuration at different
// moments, never write against each other.
type Syncer struct {
	targets  []*rulesTarget
	interval time.Duration
	keep     *keeper
	opts     Options
	kick     chan struct{}
	log      logr.Logger
	watches  *watches
}

// Options are what the Syncer needs beyond the rules.
type Options struct {
	// Keep, when set, makes the Syncer keep the two configurations whole.
	Keep *Registration
	// Cache watches the configurations (and, with Keep, Steward's
	// namespace and Deployment); without it the Syncer checks every
	// interval instead.
	Cache *clustercache.Cache
	// Elect, when set, runs lead only while this replica holds the
	// Lease, until ctx ends or it stops holding it; nil: this replica
	// writes unconditionally.
	Elect func(ctx context.Context, lead func(context.Context))
	// Reports counts, logs and records every repair.
	Reports *Reports
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
	return NewWith(kube, specs, log, Options{})
}

// NewWith is New with options; with Options.Keep it never returns nil.
func NewWith(kube kubernetes.Interface, specs []rule.Spec, log logr.Logger, opts Options) *Syncer {
	s := &Syncer{interval: rulesSyncInterval, opts: opts, kick: make(chan struct{}, 1), log: log.WithName("registration")}
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
	if opts.Keep != nil {
		s.keep = newKeeper(kube, specs, *opts.Keep, opts.Reports, log)
		s.keep.retry = s.kickAfter
	}
	if len(s.targets) == 0 && s.keep == nil {
		return nil
	}
	return s
}

// Add adds a Syncer for specs to the manager, if it has anything to keep.
// Nothing talks to the cluster until the manager starts. It returns the
// Syncer (nil when there was nothing to keep).
func Add(mgr manager.Manager, specs []rule.Spec, opts Options) (*Syncer, error) {
	// The client shares the manager's connections to the API server.
	kube, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("webhook rules syncer: kubernetes client: %w", err)
	}
	s := NewWith(kube, specs, mgr.GetLogger(), opts)
	if s == nil {
		return nil, nil
	}
	if err := mgr.Add(s); err != nil {
		return nil, fmt.Errorf("adding the webhook rules syncer: %w", err)
	}
	return s, nil
}

// SetSpecs makes the Syncer keep what specs render from now on, when it
// keeps the whole registration (a reloaded configuration). The rules of
// entries with DynamicRules stay those it started with.
func (s *Syncer) SetSpecs(specs []rule.Spec) {
	if s == nil || s.keep == nil {
		return
	}
	s.keep.setSpecs(specs)
	s.trigger()
}

// NeedLeaderElection is false: the manager runs the Syncer on every
// replica, and the Syncer campaigns for its own Lease (Options.Elect), so
// keeping the registration never waits on, nor stops, anything else.
func (s *Syncer) NeedLeaderElection() bool { return false }

func (s *Syncer) trigger() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// kickAfter asks for a sync after d.
func (s *Syncer) kickAfter(d time.Duration) { time.AfterFunc(d, s.trigger) }

// Start watches, and syncs on every change of the configurations, of
// Steward's namespace or Deployment and of any entry's rules, only while
// it leads when it campaigns.
func (s *Syncer) Start(ctx context.Context) error {
	var watched []<-chan struct{}
	for _, t := range s.targets {
		for _, wh := range t.entries {
			if ch := wh.DynamicRules.Changed; ch != nil && !slices.Contains(watched, ch) {
				watched = append(watched, ch)
				go forward(ctx, ch, s.kick)
			}
		}
	}
	if s.opts.Cache != nil {
		s.watch(ctx)
	}
	if s.opts.Elect == nil {
		s.run(ctx)
		return nil
	}
	for ctx.Err() == nil {
		s.opts.Elect(ctx, func(lead context.Context) {
			s.log.Info("holding the Lease: keeping Steward's registration")
			s.run(lead)
		})
	}
	return nil
}

// run syncs at once and then on every kick until ctx ends; without a
// watch, also every interval.
func (s *Syncer) run(ctx context.Context) {
	var tick <-chan time.Time
	if s.opts.Cache == nil {
		t := time.NewTicker(s.interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		s.syncAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-tick:
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

// keepAll brings both configurations back to what Steward renders, each
// as the watch holds it (or, without a watch, as read now).
func (s *Syncer) keepAll(ctx context.Context) {
	for _, c := range s.keep.configs {
		var live map[string]any
		if s.watches != nil {
			var ok bool
			if live, ok = s.watches.live(c.kind, c.name); !ok {
				continue
			}
		} else {
			var err error
			if live, err = c.get(ctx); err != nil && !apierrors.IsNotFound(err) {
				s.keep.log.Error(err, "reading the webhook configuration", "configuration", c.kind+"/"+c.name)
				continue
			}
		}
		if err := s.keep.sync(ctx, c, live); err != nil && ctx.Err() == nil {
			s.keep.log.Error(err, "could not keep the webhook configuration", "configuration", c.kind+"/"+c.name)
		}
	}
}

// syncAll brings every target up to date once, logging what fails.
func (s *Syncer) syncAll(ctx context.Context) {
	if s.keep != nil {
		s.keepAll(ctx)
	}
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
