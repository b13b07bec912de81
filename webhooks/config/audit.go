package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of the background audit's interval.
const (
	// DefaultAuditInterval is how often the audit runs unless configured.
	DefaultAuditInterval = 5 * time.Minute
	// MinAuditInterval is the shortest interval accepted (0 aside): each
	// pass reads every rule's caches and lists Steward's reports, which
	// is cheap every few seconds but pointless.
	MinAuditInterval = 10 * time.Second
)

// AuditConfig is the audit section of the configuration file: how often
// the background audit publishes what the rules find in the cluster as
// PolicyReports, and which rules it leaves out. Both take effect at the
// next pass when the file is reloaded.
type AuditConfig struct {
	// Interval is the time between two passes; 0 turns the audit off
	// (the reports already written stay as they are). Default 5m.
	Interval *Duration `json:"interval,omitempty"`
	// DisabledRules are rules whose findings are not published; their
	// results leave the reports at the next pass.
	DisabledRules []string `json:"disabledRules,omitempty"`
	// ReportAPIs are the report APIs the audit writes the same results
	// to, each whose CRDs the cluster serves: "wgpolicyk8s.io/v1alpha2"
	// (PolicyReport, ClusterPolicyReport) and "openreports.io/v1alpha1"
	// (OpenReports' Report, ClusterReport). Steward is granted RBAC for
	// these only. Default both.
	ReportAPIs []string `json:"reportAPIs"`
}

// The report APIs the audit can write (AuditConfig.ReportAPIs).
const (
	ReportAPIPolicyReport = "wgpolicyk8s.io/v1alpha2"
	ReportAPIOpenReports  = "openreports.io/v1alpha1"
)

// ReportAPIValues lists the report APIs, in the order they are written.
func ReportAPIValues() []string { return []string{ReportAPIPolicyReport, ReportAPIOpenReports} }

// Default fills the unset interval and report APIs.
func (c *AuditConfig) Default() {
	if c.Interval == nil {
		c.Interval = &Duration{DefaultAuditInterval}
	}
	if c.ReportAPIs == nil {
		c.ReportAPIs = ReportAPIValues()
	}
}

// Reports lists the report APIs the audit writes, in ReportAPIValues'
// order: every one when unset.
func (c AuditConfig) Reports() []string {
	if c.ReportAPIs == nil {
		return ReportAPIValues()
	}
	var out []string
	for _, api := range ReportAPIValues() {
		if slices.Contains(c.ReportAPIs, api) {
			out = append(out, api)
		}
	}
	return out
}

// Every is the interval between passes; 0 when the audit is off.
func (c AuditConfig) Every() time.Duration {
	if c.Interval == nil {
		return DefaultAuditInterval
	}
	return c.Interval.Duration
}

// Disabled says whether the audit leaves the rule named name out.
func (c AuditConfig) Disabled(name string) bool {
	return slices.Contains(c.DisabledRules, name)
}

// Validate reports a negative or too short interval, and disabled rules
// that are not Steward's, by field path.
func (c AuditConfig) Validate(path *field.Path, rules Sections) field.ErrorList {
	var errs field.ErrorList
	if every := c.Every(); every < 0 || (every > 0 && every < MinAuditInterval) {
		errs = append(errs, field.Invalid(path.Child("interval"), every.String(),
			"must be 0 (the audit is off) or at least "+MinAuditInterval.String()))
	}
	names := rules.names()
	seen := map[string]bool{}
	for i, name := range c.DisabledRules {
		p := path.Child("disabledRules").Index(i)
		switch {
		case !slices.Contains(names, name):
			errs = append(errs, field.NotSupported(p, name, names))
		case seen[name]:
			errs = append(errs, field.Duplicate(p, name))
		}
		seen[name] = true
	}
	apis := map[string]bool{}
	for i, api := range c.ReportAPIs {
		p := path.Child("reportAPIs").Index(i)
		switch {
		case !slices.Contains(ReportAPIValues(), api):
			errs = append(errs, field.NotSupported(p, api, ReportAPIValues()))
		case apis[api]:
			errs = append(errs, field.Duplicate(p, api))
		}
		apis[api] = true
	}
	return errs
}

// Duration is a length of time written as Go writes it ("5m", "90s"), or
// the number 0.
type Duration struct{ time.Duration }

// MarshalJSON writes the duration as Go formats it ("5m0s").
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.Duration.String())
}

// UnmarshalJSON reads a string time.ParseDuration accepts, or 0.
func (d *Duration) UnmarshalJSON(data []byte) error {
	if string(data) == "0" {
		d.Duration = 0
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"5m\" or \"90s\", or 0, not %s", data)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("a duration is a string such as \"5m\" or \"90s\", or 0: %w", err)
	}
	d.Duration = v
	return nil
}
