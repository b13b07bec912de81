package claimguard

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/rule"
)

// DefaultWebhookConfigurationName is the ValidatingWebhookConfiguration that
// Steward's manifests install; claimguard keeps the rules of its own entries
// in it in step with the cluster's CompositeResourceDefinitions.
const DefaultWebhookConfigurationName = "steward"

// Config is claimguard's section of the configuration file.
type Config struct {
	// Mode is how denials take effect (enforce, warn or audit), or off.
	Mode rule.Mode `json:"mode,omitempty"`
	// RequireForegroundDelete denies deleting a composite resource that has
	// no claim and no owner unless the request asks for Foreground
	// propagation, so a GitOps tool or a person cannot remove an XR while its
	// composed resources are still deleting their external resources.
	RequireForegroundDelete bool `json:"requireForegroundDelete,omitempty"`
	// ManageWebhookRules keeps the rules of claimguard's webhook entries in
	// step with the CompositeResourceDefinitions in the cluster (server-side
	// apply under the field manager "steward-claimguard"). Turn it off only
	// when something else maintains those rules; claims of kinds missing
	// from them are then never checked. Defaults to true.
	ManageWebhookRules *bool `json:"manageWebhookRules,omitempty"`
	// WebhookConfigurationName is the ValidatingWebhookConfiguration holding
	// claimguard's entries; defaults to "steward".
	WebhookConfigurationName string `json:"webhookConfigurationName,omitempty"`
	// ForegroundDeletionWarnAfter is how long a composite resource may be
	// deleting in Foreground before the audit warns about it, naming what
	// still holds it (a Go duration, e.g. "15m"). Defaults to 15 minutes.
	ForegroundDeletionWarnAfter *metav1.Duration `json:"foregroundDeletionWarnAfter,omitempty"`
}

// DefaultForegroundDeletionWarnAfter is ForegroundDeletionWarnAfter unset:
// long enough for a provider to delete ordinary external resources, short
// enough that a hung deletion is noticed the same hour.
const DefaultForegroundDeletionWarnAfter = 15 * time.Minute

// Default fills unset settings.
func (c *Config) Default() {
	if c.Mode == "" {
		c.Mode = rule.Enforce
	}
	if c.ManageWebhookRules == nil {
		t := true
		c.ManageWebhookRules = &t
	}
	if c.WebhookConfigurationName == "" {
		c.WebhookConfigurationName = DefaultWebhookConfigurationName
	}
	if c.ForegroundDeletionWarnAfter == nil {
		c.ForegroundDeletionWarnAfter = &metav1.Duration{Duration: DefaultForegroundDeletionWarnAfter}
	}
}

// Validate reports invalid settings by field path.
func (c *Config) Validate(p *field.Path) field.ErrorList {
	errs := c.Mode.Validate(p.Child("mode"))
	for _, msg := range validation.IsDNS1123Subdomain(c.WebhookConfigurationName) {
		errs = append(errs, field.Invalid(p.Child("webhookConfigurationName"), c.WebhookConfigurationName, msg))
	}
	if d := c.ForegroundDeletionWarnAfter; d != nil && d.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("foregroundDeletionWarnAfter"), d.Duration.String(), "must be a positive duration, e.g. 15m"))
	}
	return errs
}

// foregroundDeletionWarnAfter is the configured threshold, or the default.
func (c *Config) foregroundDeletionWarnAfter() time.Duration {
	if c.ForegroundDeletionWarnAfter == nil {
		return DefaultForegroundDeletionWarnAfter
	}
	return c.ForegroundDeletionWarnAfter.Duration
}

// manageRules reports whether claimguard maintains its webhook entries' rules.
func (c *Config) manageRules() bool {
	return c.ManageWebhookRules == nil || *c.ManageWebhookRules
}

// RuleMode is the configured mode (rule.Settings).
func (c *Config) RuleMode() rule.Mode { return c.Mode }

var _ rule.Settings = (*Config)(nil)
