package argocdguard

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Config is the argocdguard section of Steward's configuration file. It
// has fleetguard's shape, with Argo CD's defaults.
type Config struct {
	// Settings are every GitOps guard's; settingsDocs says what they mean
	// for Argo CD.
	gitops.Settings
	// ControlPlaneNamespace is the namespace Argo CD runs in: an
	// Application there is named in tracking ids by its name alone, one
	// elsewhere as "<namespace>_<name>".
	ControlPlaneNamespace string `json:"controlPlaneNamespace,omitempty"`
	// ServerUsers are the identities of argocd-server, which writes
	// people's edits from the UI ("edit live manifest") and argocd app
	// patch: hand edits, refused like any other unless UIEditsAreGitOps.
	ServerUsers []string `json:"serverUsers"`
	// UIEditsAreGitOps makes ServerUsers' writes count as Argo CD's own.
	UIEditsAreGitOps bool `json:"uiEditsAreGitOps,omitempty"`
	// TrackingLabel, when set, also tracks objects by this label, whose
	// value is the Application's instance name, as Argo CD's label and
	// annotation+label tracking methods do (app.kubernetes.io/instance).
	// Off by default: charts copy that label everywhere, so an object is
	// then claimed only when its Application's status.resources lists it.
	TrackingLabel string `json:"trackingLabel,omitempty"`
	// OptOutGroups may add Argo CD's per-object opt-outs
	// (argocd.argoproj.io/compare-options, argocd.argoproj.io/sync-options)
	// to a managed object in the cluster, each as a change of its own.
	OptOutGroups []string `json:"optOutGroups,omitempty"`
	// InstallationID is the guarded Argo CD's installationID (argocd-cm),
	// where several instances manage one cluster: a tracking id counts only
	// on objects whose argocd.argoproj.io/installation-id is the same
	// (empty: those without one), as Argo CD tells its objects from another
	// instance's.
	InstallationID string `json:"installationID,omitempty"`
	// SyncImpersonation follows Argo CD's sync impersonation, set where
	// argocd-cm has application.sync.impersonation.enabled: "true". The
	// service account an Application's AppProject names for its
	// destination (spec.destinationServiceAccounts, the first match) then
	// writes that Application's objects, and only those.
	SyncImpersonation bool `json:"syncImpersonation,omitempty"`
}

// settingsDocs describe the settings Config embeds for Argo CD, as the
// configuration's schema shows them.
var settingsDocs = map[string]string{
	"agentUsers": "AgentUsers are the identities Argo CD's application controller writes as. Their requests never reach Steward " +
		"(the webhooks' matchConditions exclude them). Setting the list replaces the defaults.",
	"agentGroups":   "AgentGroups are groups whose members count as Argo CD. None by default.",
	"ignoredFields": "IgnoredFields are JSON pointers, per group and kind, that may be changed by hand, besides the Applications' ignoreDifferences.",
	"undeclaredFields": "UndeclaredFields is what a person's change of fields Git does not declare gets: refuse (the default), " +
		"or mirror, which allows it, as Argo CD keeps it. Service accounts may always change fields Git does not declare.",
}

// RefineSchema describes the embedded settings for Argo CD.
func (Config) RefineSchema(s map[string]any) { gitops.Describe(s, settingsDocs) }

// Argo CD's identities, as its install manifests create them in the argocd
// namespace.
var (
	defaultAgentUsers  = []string{"system:serviceaccount:argocd:argocd-application-controller"}
	defaultServerUsers = []string{"system:serviceaccount:argocd:argocd-server"}
)

const defaultControlPlaneNamespace = "argocd"

// Default fills unset settings.
func (c *Config) Default() {
	c.DefaultTo(defaultAgentUsers, []string{})
	if c.ServerUsers == nil {
		c.ServerUsers = slices.Clone(defaultServerUsers)
	}
	if c.ControlPlaneNamespace == "" {
		c.ControlPlaneNamespace = defaultControlPlaneNamespace
	}
}

// Validate reports every invalid setting by its field path.
func (c *Config) Validate(p *field.Path) field.ErrorList {
	errs := c.ValidateAgent(p)
	errs = append(errs, gitops.ValidateNames(p.Child("serverUsers"), c.ServerUsers, "a user name")...)
	errs = append(errs, gitops.ValidateNames(p.Child("optOutGroups"), c.OptOutGroups, "a group name")...)
	errs = append(errs, gitops.ValidateName(p.Child("controlPlaneNamespace"), c.ControlPlaneNamespace, validation.IsDNS1123Label, "a namespace name")...)
	errs = append(errs, gitops.ValidateName(p.Child("trackingLabel"), c.TrackingLabel, validation.IsQualifiedName, "a label key")...)
	errs = append(errs, c.ValidateUndeclared(p)...)
	return append(errs, c.ValidateIgnored(p)...)
}

var (
	_ rule.Settings      = (*Config)(nil)
	_ rule.SchemaRefiner = Config{}
)

// writers are the identities excluded as Argo CD's own.
func (c *Config) writers() rule.Identities {
	users := c.AgentUsers
	if c.UIEditsAreGitOps {
		users = append(append([]string(nil), users...), c.ServerUsers...)
	}
	return rule.Identities{Users: users, Groups: c.AgentGroups}
}
