package apimigration

import (
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/rule"
)

// DefaultFluxVersion is the target release when the configuration pins
// none and the cluster has no Flux CRDs (or Steward has not seen them yet),
// and the target of `steward check --config` for a configuration without
// fluxVersion: 2.6, the newest Flux release that removes none of the
// versions in the table. With it every old version is deprecated (annotated
// and warned about) and none is refused, so Steward never starts failing
// writes that a Flux it cannot identify still accepts.
const DefaultFluxVersion = "2.6"

// Config is the apimigration section of Steward's configuration.
type Config struct {
	// Mode is how refusals of removed versions take effect. In audit mode
	// the rule also leaves deprecated writes unannotated.
	Mode rule.Mode `json:"mode,omitempty"`
	// FluxVersion pins the target: the Flux release the cluster runs or is
	// being upgraded to, as MAJOR.MINOR ("2.8"). Writes through versions
	// that release no longer serves are refused. Unset, the server follows
	// the Flux release installed in the cluster (see ClusterTarget). A
	// release newer than the table is refused (ParseKnownRelease).
	FluxVersion FluxRelease `json:"fluxVersion,omitempty"`
}

// FluxRelease is a Flux release as written in the configuration, such as
// "2.8". It must be a YAML string: unquoted, 2.10 is the number 2.1, which
// would silently target a much older release, so numbers are refused.
type FluxRelease string

var _ rule.SchemaRefiner = FluxRelease("")

// UnmarshalJSON accepts only strings (and null, meaning unset).
func (v *FluxRelease) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*v = ""
		return nil
	}
	if len(b) == 0 || b[0] != '"' {
		return fmt.Errorf("rules.%s.fluxVersion: %s is not a string: quote the release, for example fluxVersion: \"2.10\" (unquoted, YAML reads 2.10 as the number 2.1)", Name, b)
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*v = FluxRelease(s)
	return nil
}

// RefineSchema lets the configuration's schema accept a release
// ParseRelease reads, or nothing (unset).
func (FluxRelease) RefineSchema(s map[string]any) {
	s["pattern"] = "^$|" + ReleasePattern()
}

// Default fills unset settings.
func (c *Config) Default() {
	if c.Mode == "" {
		c.Mode = rule.Enforce
	}
}

// Validate reports invalid settings by field path.
func (c *Config) Validate(p *field.Path) field.ErrorList {
	errs := c.Mode.Validate(p.Child("mode"))
	if c.FluxVersion == "" {
		return errs
	}
	if _, err := ParseKnownRelease(string(c.FluxVersion)); err != nil {
		msg := err.Error()
		if newer := (*NewerReleaseError)(nil); errors.As(err, &newer) {
			msg += ": upgrade Steward before pinning " + newer.Release.String() + ", or leave fluxVersion unset to follow the Flux release the cluster runs"
		}
		errs = append(errs, field.Invalid(p.Child("fluxVersion"), string(c.FluxVersion), msg))
	}
	return errs
}

// Pinned reports whether the configuration pins the target release.
func (c Config) Pinned() bool { return c.FluxVersion != "" }

// Target is the configured release; an unset or invalid value (which
// Validate reports at start-up) falls back to the default. The server,
// unless Pinned, follows the cluster instead; `steward check` reads this.
func (c Config) Target() Release {
	r, err := ParseRelease(string(c.FluxVersion))
	if err != nil {
		return MustParseRelease(DefaultFluxVersion)
	}
	return r
}

// RuleMode is the configured mode (rule.Settings).
func (c *Config) RuleMode() rule.Mode { return c.Mode }

var _ rule.Settings = (*Config)(nil)
