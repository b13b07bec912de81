package fleetguard

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
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
	// UndeclaredFields is what a person's change of fields Git does not
	// declare gets: refuse (the default), or mirror, which allows it, as
	// Fleet keeps it. Service accounts may always change fields Git does
	// not declare.
	UndeclaredFields gitops.Undeclared `json:"undeclaredFields,omitempty"`
}

// IgnoredFields lists the paths of one kind that changes may touch.
type IgnoredFields = gitops.IgnoredFields

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
	errs = append(errs, gitops.ValidateNames(p.Child("agentUsers"), c.AgentUsers, "a user name")...)
	errs = append(errs, gitops.ValidateNames(p.Child("agentGroups"), c.AgentGroups, "a group name")...)
	errs = append(errs, gitops.ValidateIgnored(p.Child("ignoredFields"), c.IgnoredFields)...)
	errs = append(errs, c.UndeclaredFields.Validate(p.Child("undeclaredFields"))...)
	return errs
}

// RuleMode is the configured mode (rule.Settings).
func (c *Config) RuleMode() rule.Mode { return c.Mode }

var _ rule.Settings = (*Config)(nil)
