package webhookserver

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/audit"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/rulessync"
	"github.com/stewardhq/steward/webhooks/serving"
)

// servedRules are the rules behind every webhook path Steward serves, as
// the configuration in effect serves them (serving.Table), and what the
// background audit reads of them.
type servedRules struct {
	// rules are the rules served since start-up, in the list's order, each
	// replaced by its heir on every reload (never by nil: a rule turned off
	// keeps its last instance, which a later reload's heir inherits from).
	rules []webhooks.Configured
	table *serving.Table
	// audited is what the background audit reads each pass: a copy of
	// rules and the audit settings, replaced with them on every reload.
	audited atomic.Pointer[auditView]
	// registration keeps the webhook configurations; on every reload it
	// is told the entries of the rules served now (nil: nothing kept).
	registration *rulessync.Syncer
}

// auditView is one configuration's rules and audit settings.
type auditView struct {
	rules []webhooks.Configured
	audit config.AuditConfig
}

// newServedRules serves rules, as cfg configures them. events is nil when
// Steward records no Events; metrics record the decisions and log
// receives their lines.
func newServedRules(cfg config.Config, rules []webhooks.Configured, events *serving.DenialEvents, metrics *serving.Metrics, log logr.Logger) *servedRules {
	s := &servedRules{rules: rules}
	s.table = serving.NewTable(toServed(rules), settings(cfg), events, metrics, log)
	s.audited.Store(&auditView{rules: slices.Clone(rules), audit: cfg.Audit})
	return s
}

// toServed is the configured rules as the serving layer takes them.
func toServed(rules []webhooks.Configured) []serving.Served {
	out := make([]serving.Served, len(rules))
	for i, c := range rules {
		out[i] = serving.Served{Rule: c.Rule, Mode: c.Mode}
	}
	return out
}

// settings are cfg's settings for every rule.
func settings(cfg config.Config) serving.Settings {
	return serving.Settings{
		ExemptUsers:     cfg.ExemptUsers,
		ExemptGroups:    cfg.ExemptGroups,
		BreakGlassGroup: cfg.BreakGlassGroup,
		RecordEvents:    cfg.RecordEventsFor != config.EventsForNone,
	}
}

// forAudit returns the rules being served and the audit settings in
// effect, for the background audit (audit.Current). Rules turned off by a
// reload are there with mode off.
func (s *servedRules) forAudit() ([]webhooks.Configured, config.AuditConfig) {
	v := s.audited.Load()
	return v.rules, v.audit
}

// auditCurrent is the background audit's audit.Current: the auditors of
// the rules served now, and the audit interval in effect.
func (s *servedRules) auditCurrent() ([]audit.Auditor, time.Duration) {
	rules, cfg := s.forAudit()
	return webhooks.Auditors(cfg, rules), cfg.Every()
}

// auditReports are the report APIs the audit writes now
// (audit.reportAPIs).
func (s *servedRules) auditReports() []audit.ReportAPI {
	_, cfg := s.forAudit()
	return audit.ReportAPIs(cfg.Reports())
}

// swap makes next, built from cfg, answer every path from the next
// request on.
func (s *servedRules) swap(cfg config.Config, next []webhooks.Configured) {
	s.table.Swap(toServed(next), settings(cfg))
	for i, c := range next {
		if c.Rule != nil {
			s.rules[i] = c
		} else {
			s.rules[i].Mode = rule.Off
		}
	}
	s.audited.Store(&auditView{rules: slices.Clone(s.rules), audit: cfg.Audit})
	var specs []rule.Spec
	for _, c := range s.rules {
		if c.Mode != rule.Off {
			specs = append(specs, c.Rule.Spec())
		}
	}
	s.registration.SetSpecs(specs)
}

// handler is what answers at path: whichever configuration is current.
func (s *servedRules) handler(path string) admission.Handler {
	return s.table.Handler(path)
}
