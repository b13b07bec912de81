package main

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/rule"
)

// servedRules are the handlers behind every webhook path Steward serves.
// The paths are fixed at start-up, as the manifests register them; what
// answers at each path is swapped, all paths at once, when a reloaded
// configuration takes effect, so a request is judged wholly by the old
// configuration or wholly by the new one.
type servedRules struct {
	// rules are the rules served since start-up, in the list's order, each
	// replaced by its heir on every reload (never by nil: a rule turned off
	// keeps its last instance, which a later reload's heir inherits from).
	rules []webhooks.Configured
	// webhooks are each rule's entries as registered at start-up.
	webhooks [][]rule.Webhook
	events   *rule.DenialEvents
	log      logr.Logger
	current  atomic.Pointer[handlers]
	// audited is what the background audit reads each pass: a copy of
	// rules and the audit settings, replaced with them on every reload.
	audited atomic.Pointer[auditView]
}

// auditView is one configuration's rules and audit settings.
type auditView struct {
	rules []webhooks.Configured
	audit webhooks.AuditConfig
}

// handlers is one configuration's handler for each path.
type handlers map[string]admission.Handler

// newServedRules serves rules, as cfg configures them. events is nil when
// Steward records no Events; log receives the decision lines.
func newServedRules(cfg webhooks.Config, rules []webhooks.Configured, events *rule.DenialEvents, log logr.Logger) *servedRules {
	s := &servedRules{rules: rules, events: events, log: log}
	for _, c := range rules {
		s.webhooks = append(s.webhooks, c.Rule.Spec().Webhooks)
	}
	s.current.Store(s.handlersFor(cfg, rules))
	s.audited.Store(&auditView{rules: slices.Clone(rules), audit: cfg.Audit})
	return s
}

// forAudit returns the rules being served and the audit settings in
// effect, for the background audit (audit.Current). Rules turned off by a
// reload are there with mode off.
func (s *servedRules) forAudit() ([]webhooks.Configured, webhooks.AuditConfig) {
	v := s.audited.Load()
	return v.rules, v.audit
}

// handlersFor wraps each rule of next (next[i] in place of s.rules[i]) with
// cfg's modes, exemptions and break-glass group. A rule turned off (nil)
// allows every request without judging it: its webhooks stay registered
// until the manifests are rendered again, and answering 404 there would
// refuse writes with failurePolicy Fail.
func (s *servedRules) handlersFor(cfg webhooks.Config, next []webhooks.Configured) *handlers {
	events := s.events
	if cfg.RecordEventsFor == webhooks.EventsForNone {
		events = nil
	}
	out := handlers{}
	for i, c := range next {
		for _, wh := range s.webhooks[i] {
			if c.Rule == nil {
				out[wh.Path] = unjudged{}
				continue
			}
			out[wh.Path] = rule.Wrap(c.Rule, wh, rule.Options{
				Mode:            c.Mode,
				ExemptUsers:     cfg.ExemptUsers,
				ExemptGroups:    cfg.ExemptGroups,
				BreakGlassGroup: cfg.BreakGlassGroup,
				Log:             s.log,
				Events:          events,
			})
		}
	}
	return &out
}

// swap makes next, built from cfg, answer every path from the next
// request on.
func (s *servedRules) swap(cfg webhooks.Config, next []webhooks.Configured) {
	h := s.handlersFor(cfg, next)
	for i, c := range next {
		if c.Rule != nil {
			s.rules[i] = c
		} else {
			s.rules[i].Mode = rule.Off
		}
	}
	s.current.Store(h)
	s.audited.Store(&auditView{rules: slices.Clone(s.rules), audit: cfg.Audit})
}

// handler is what the server registers at path: it asks whichever
// configuration is current.
func (s *servedRules) handler(path string) admission.Handler {
	return dispatch{s: s, path: path}
}

type dispatch struct {
	s    *servedRules
	path string
}

func (d dispatch) Handle(ctx context.Context, req admission.Request) admission.Response {
	return (*d.s.current.Load())[d.path].Handle(ctx, req)
}

// unjudged answers for a rule turned off while Steward runs.
type unjudged struct{}

func (unjudged) Handle(context.Context, admission.Request) admission.Response {
	return admission.Allowed("")
}
