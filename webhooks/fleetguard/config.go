package fleetguard

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Config is the fleetguard section of Steward's configuration file.
type Config struct {
	// Settings are every GitOps guard's; settingsDocs says what they mean
	// for Fleet.
	gitops.Settings
}

// settingsDocs describe the settings Config embeds for Fleet, as the
// configuration's schema shows them.
var settingsDocs = map[string]string{
	"agentUsers": "AgentUsers are the identities the Fleet agent writes as. Their requests never reach Steward " +
		"(the webhook's matchConditions exclude them). Setting the list replaces the defaults. " +
		"A service account the agent impersonates (fleet.yaml serviceAccount) arrives as that service account, " +
		"so it belongs here or in AgentGroups. An empty list (no agent users) is kept when the configuration is written out, " +
		"as `steward manifests` does into the ConfigMap: dropped, it would read back as the defaults.",
	"agentGroups": "AgentGroups are groups whose members count as the Fleet agent. The defaults are the service-account groups " +
		"of Fleet's agent namespaces: Fleet only impersonates service accounts in its own namespace.",
	"ignoredFields": "IgnoredFields are JSON pointers, per group and kind, that may be changed by hand " +
		"(Fleet's diff.comparePatches idea), e.g. /spec/replicas of a Deployment scaled by a HorizontalPodAutoscaler.",
	"undeclaredFields": "UndeclaredFields is what a person's change of fields Git does not declare gets: refuse (the default), " +
		"or mirror, which allows it, as Fleet keeps it. Service accounts may always change fields Git does not declare.",
}

// RefineSchema describes the embedded settings for Fleet.
func (Config) RefineSchema(s map[string]any) { gitops.Describe(s, settingsDocs) }

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
func (c *Config) Default() { c.DefaultTo(defaultAgentUsers, defaultAgentGroups) }

// Validate reports every invalid setting by its field path.
func (c *Config) Validate(p *field.Path) field.ErrorList {
	errs := c.ValidateAgent(p)
	errs = append(errs, c.ValidateIgnored(p)...)
	return append(errs, c.ValidateUndeclared(p)...)
}

var (
	_ rule.Settings      = (*Config)(nil)
	_ rule.SchemaRefiner = Config{}
)
