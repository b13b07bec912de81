package claimguard

import (
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
}

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
}

// Validate reports invalid settings by field path.
func (c *Config) Validate(p *field.Path) field.ErrorList {
	errs := c.Mode.Validate(p.Child("mode"))
	for _, msg := range validation.IsDNS1123Subdomain(c.WebhookConfigurationName) {
		errs = append(errs, field.Invalid(p.Child("webhookConfigurationName"), c.WebhookConfigurationName, msg))
	}
	return errs
}

// manageRules reports whether claimguard maintains its webhook entries' rules.
func (c *Config) manageRules() bool {
	return c.ManageWebhookRules == nil || *c.ManageWebhookRules
}

// RuleMode is the configured mode (rule.Settings).
func (c *Config) RuleMode() rule.Mode { return c.Mode }

var _ rule.Settings = (*Config)(nil)
