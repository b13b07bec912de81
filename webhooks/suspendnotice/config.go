package suspendnotice

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Config is the suspendnotice section of Steward's configuration file.
type Config struct {
	// Mode is how the rule takes effect. In audit mode nothing is patched
	// and no warning is returned; the decision is only logged and counted.
	Mode rule.Mode `json:"mode,omitempty"`
	// Controllers are the reporting controllers whose "next run in" events
	// are rewritten for suspended objects; the webhook configuration sends
	// Steward no other events.
	Controllers []string `json:"controllers,omitempty"`
}

// Default fills unset settings.
func (c *Config) Default() {
	if c.Mode == "" {
		c.Mode = rule.Enforce
	}
	if len(c.Controllers) == 0 {
		c.Controllers = append([]string(nil), defaultControllers...)
	}
}

// Validate reports invalid settings by field path.
func (c *Config) Validate(path *field.Path) field.ErrorList {
	errs := c.Mode.Validate(path.Child("mode"))
	seen := map[string]bool{}
	for i, name := range c.Controllers {
		p := path.Child("controllers").Index(i)
		switch {
		case name == "":
			errs = append(errs, field.Required(p, "a controller name"))
		case strings.TrimSpace(name) != name:
			errs = append(errs, field.Invalid(p, name, "must not have surrounding spaces"))
		case seen[name]:
			errs = append(errs, field.Duplicate(p, name))
		}
		seen[name] = true
	}
	return errs
}

// RuleMode is the configured mode (rule.Settings).
func (c *Config) RuleMode() rule.Mode { return c.Mode }

var _ rule.Settings = (*Config)(nil)
