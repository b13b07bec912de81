package fluxguard

import (
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Config is the fluxguard section of Steward's configuration file. It has
// fleetguard's shape, with Flux's defaults.
type Config struct {
	// Settings are every GitOps guard's; settingsDocs says what they mean
	// for Flux.
	gitops.Settings
	// DefaultServiceAccount is the service account Flux's controllers
	// impersonate for owners without spec.serviceAccountName (their
	// --default-service-account flag; Flux sets none). It writes only for
	// those owners, in their namespaces.
	DefaultServiceAccount string `json:"defaultServiceAccount,omitempty"`
	// OptOutGroups may add Flux's opt-out markers
	// (kustomize.toolkit.fluxcd.io/reconcile: disabled, ssa, prune,
	// helm.toolkit.fluxcd.io/driftDetection: disabled) to a managed
	// object in the cluster, each as a change of its own. None by default:
	// opt-outs then come from Git (or break-glass).
	OptOutGroups []string `json:"optOutGroups,omitempty"`
	// OverrideManagers are kustomize-controller's --override-manager list:
	// field managers whose fields it removes at each reconcile, like
	// kubectl's.
	OverrideManagers []string `json:"overrideManagers,omitempty"`
}

// settingsDocs describe the settings Config embeds for Flux, as the
// configuration's schema shows them.
var settingsDocs = map[string]string{
	"agentUsers": "AgentUsers are the identities Flux's controllers write as. Their requests never reach Steward " +
		"(the webhooks' matchConditions exclude them). Setting the list replaces the defaults.",
	"agentGroups": "AgentGroups are groups whose members count as Flux. None by default: a tenant's service account writes " +
		"only for its own Kustomizations and HelmReleases (their spec.serviceAccountName), and exempting a whole namespace's " +
		"service accounts would exempt every workload in it.",
	"ignoredFields": "IgnoredFields are JSON pointers, per group and kind, that may be changed by hand, besides the owners' own ignore rules.",
	"undeclaredFields": "UndeclaredFields is what a person's change of fields Git does not declare gets: refuse (the default), " +
		"or mirror, which allows it where Flux keeps it and refuses it where kustomize-controller strips it " +
		"(a kubectl field manager wrote it). Service accounts may always change fields Git does not declare: Flux keeps them.",
}

// RefineSchema describes the embedded settings for Flux.
func (Config) RefineSchema(s map[string]any) { gitops.Describe(s, settingsDocs) }

// Flux's controllers, as Flux installs them: every one of them writes
// Flux-labelled objects (source-controller the finalizers of the sources a
// Kustomization applies and of the HelmCharts it makes for HelmReleases,
// the notification and image controllers their objects' status and
// finalizers, source-watcher its ExternalArtifacts).
var defaultAgentUsers = []string{
	"system:serviceaccount:flux-system:kustomize-controller",
	"system:serviceaccount:flux-system:helm-controller",
	"system:serviceaccount:flux-system:source-controller",
	"system:serviceaccount:flux-system:notification-controller",
	"system:serviceaccount:flux-system:image-reflector-controller",
	"system:serviceaccount:flux-system:image-automation-controller",
	"system:serviceaccount:flux-system:source-watcher",
}

// Default fills unset settings.
func (c *Config) Default() { c.DefaultTo(defaultAgentUsers, []string{}) }

// Validate reports every invalid setting by its field path.
func (c *Config) Validate(p *field.Path) field.ErrorList {
	errs := c.ValidateAgent(p)
	errs = append(errs, gitops.ValidateNames(p.Child("optOutGroups"), c.OptOutGroups, "a group name")...)
	errs = append(errs, gitops.ValidateNames(p.Child("overrideManagers"), c.OverrideManagers, "a field manager name")...)
	errs = append(errs, c.ValidateUndeclared(p)...)
	errs = append(errs, gitops.ValidateName(p.Child("defaultServiceAccount"), c.DefaultServiceAccount, validation.IsDNS1123Subdomain, "a service account name")...)
	return append(errs, c.ValidateIgnored(p)...)
}

var (
	_ rule.Settings      = (*Config)(nil)
	_ rule.SchemaRefiner = Config{}
)
