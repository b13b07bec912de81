package fleetguard

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Config is the fleetguard section of Steward's configuration file.
type Config struct {
	// Mode is how denials take effect: enforce, warn or audit; or off.
	Mode rule.Mode `json:"mode,omitempty"`
	// AgentUsers are the identities the Fleet agent writes as. Their
	// requests never reach Steward (the webhook's matchConditions exclude
	// them). Setting the list replaces the defaults. A service account the
	// agent impersonates (fleet.yaml serviceAccount) arrives as that
	// service account, so it belongs here or in AgentGroups. An empty
	// list (no agent users) is kept when the configuration is written out,
	// as `steward manifests` does into the ConfigMap: dropped, it would
	// read back as the defaults.
	AgentUsers []string `json:"agentUsers"`
	// AgentGroups are groups whose members count as the Fleet agent. The
	// defaults are the service-account groups of Fleet's agent namespaces:
	// Fleet only impersonates service accounts in its own namespace.
	AgentGroups []string `json:"agentGroups"`
	// IgnoredFields are JSON pointers, per group and kind, that may be
	// changed by hand (Fleet's diff.comparePatches idea), e.g.
	// /spec/replicas of a Deployment scaled by a HorizontalPodAutoscaler.
	IgnoredFields []IgnoredFields `json:"ignoredFields,omitempty"`
}

// IgnoredFields lists the paths of one kind that changes may touch.
type IgnoredFields struct {
	// Group is the API group, "" for the core group.
	Group string `json:"group"`
	// Kind is the object kind, e.g. Deployment.
	Kind string `json:"kind"`
	// Paths are RFC 6901 JSON pointers; a pointer also covers everything
	// below it.
	Paths []string `json:"paths"`
}

// The Fleet agent's identities, from Fleet's own manifests: the agent runs
// as the fleet-agent service account in cattle-fleet-system, or in
// cattle-fleet-local-system for the cluster Fleet's controller runs on.
var (
	defaultAgentUsers = []string{
		"system:serviceaccount:cattle-fleet-system:fleet-agent",
		"system:serviceaccount:cattle-fleet-local-system:fleet-agent",
	}
	defaultAgentGroups = []string{
		"system:serviceaccounts:cattle-fleet-system",
		"system:serviceaccounts:cattle-fleet-local-system",
	}
)

// Default fills unset settings.
func (c *Config) Default() {
	if c.Mode == "" {
		c.Mode = rule.Enforce
	}
	if c.AgentUsers == nil {
		c.AgentUsers = append([]string(nil), defaultAgentUsers...)
	}
	if c.AgentGroups == nil {
		c.AgentGroups = append([]string(nil), defaultAgentGroups...)
	}
}

// Validate reports every invalid setting by its field path.
func (c *Config) Validate(p *field.Path) field.ErrorList {
	errs := c.Mode.Validate(p.Child("mode"))
	for i, u := range c.AgentUsers {
		if u == "" {
			errs = append(errs, field.Required(p.Child("agentUsers").Index(i), "a user name"))
		}
	}
	for i, g := range c.AgentGroups {
		if g == "" {
			errs = append(errs, field.Required(p.Child("agentGroups").Index(i), "a group name"))
		}
	}
	for i, f := range c.IgnoredFields {
		fp := p.Child("ignoredFields").Index(i)
		if f.Kind == "" {
			errs = append(errs, field.Required(fp.Child("kind"), "the kind the paths belong to, e.g. Deployment"))
		}
		if len(f.Paths) == 0 {
			errs = append(errs, field.Required(fp.Child("paths"), "at least one JSON pointer, e.g. /spec/replicas"))
		}
		for j, s := range f.Paths {
			pp := fp.Child("paths").Index(j)
			ptr, err := object.ParsePointer(s)
			switch {
			case err != nil:
				errs = append(errs, field.Invalid(pp, s, "not an RFC 6901 JSON pointer: "+err.Error()))
			case len(ptr) == 0:
				errs = append(errs, field.Invalid(pp, s, "the empty pointer is the whole object and would ignore every change"))
			}
		}
	}
	return errs
}

// RuleMode is the configured mode (rule.Settings).
func (c *Config) RuleMode() rule.Mode { return c.Mode }

var _ rule.Settings = (*Config)(nil)
