package fluxguard

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
	"github.com/stewardhq/steward/webhooks/rule"
)

func TestConfigDefault(t *testing.T) {
	cases := map[string]gitopstest.DefaultCase[Config]{
		"Empty": {
			Reason: "An empty section enforces and trusts every Flux controller as Flux installs them (source-controller writes the finalizers of the sources a Kustomization applies), and no group: a tenant's service account writes only for its own owners.",
			In:     Config{},
			Want: Config{
				Settings: gitops.Settings{Mode: rule.Enforce, AgentUsers: []string{
					"system:serviceaccount:flux-system:kustomize-controller",
					"system:serviceaccount:flux-system:helm-controller",
					"system:serviceaccount:flux-system:source-controller",
					"system:serviceaccount:flux-system:notification-controller",
					"system:serviceaccount:flux-system:image-reflector-controller",
					"system:serviceaccount:flux-system:image-automation-controller",
					"system:serviceaccount:flux-system:source-watcher",
				}, AgentGroups: []string{}},
			},
		},
		"ExplicitListsReplaceDefaults": {
			Reason: "Lists that are set, even empty, are kept as they are; so are the settings without defaults.",
			In: Config{
				Settings:              gitops.Settings{Mode: rule.Warn, AgentUsers: []string{}, AgentGroups: []string{"flux-admins"}},
				DefaultServiceAccount: "flux-applier",
				OptOutGroups:          []string{"platform-admins"},
			},
			Want: Config{
				Settings:              gitops.Settings{Mode: rule.Warn, AgentUsers: []string{}, AgentGroups: []string{"flux-admins"}},
				DefaultServiceAccount: "flux-applier",
				OptOutGroups:          []string{"platform-admins"},
			},
		},
	}
	gitopstest.TestDefault(t, cases)
}

func TestConfigDefaultDoesNotShareTheDefaults(t *testing.T) {
	// One rule's configuration must never change another's: Default
	// hands out a copy of the built-in list.
	var a Config
	a.Default()
	a.AgentUsers[0] = "changed"
	var b Config
	b.Default()
	if b.AgentUsers[0] != "system:serviceaccount:flux-system:kustomize-controller" {
		t.Errorf("changing one defaulted configuration changed the defaults: %v", b.AgentUsers)
	}
}

func TestConfigValidate(t *testing.T) {
	p := field.NewPath("rules", "fluxguard")
	cases := map[string]gitopstest.ValidateCase[Config]{
		"Valid": {
			Reason: "Every setting filled in correctly.",
			In: Config{
				Settings:              gitops.Settings{Mode: rule.Audit, AgentUsers: []string{kustomizeController}, AgentGroups: []string{"flux-admins"}, IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas"}}}},
				DefaultServiceAccount: "flux-applier",
				OptOutGroups:          []string{"platform-admins"},
			},
		},
		"DefaultedIsValid": {
			Reason: "What Default fills in passes.",
			In:     func() Config { c := Config{}; c.Default(); return c }(),
		},
		"BadMode": {
			Reason: "Only enforce, warn, audit and off exist.",
			In:     Config{Settings: gitops.Settings{Mode: "block"}},
			Want:   field.ErrorList{field.NotSupported(p.Child("mode"), rule.Mode("block"), []string{"enforce", "warn", "audit", "off"})},
		},
		"EmptyAgentUser": {
			Reason: "An empty user name is named by its index.",
			In:     Config{Settings: gitops.Settings{Mode: rule.Enforce, AgentUsers: []string{kustomizeController, ""}}},
			Want:   field.ErrorList{field.Required(p.Child("agentUsers").Index(1), "a user name")},
		},
		"EmptyAgentGroup": {
			Reason: "So is an empty group name.",
			In:     Config{Settings: gitops.Settings{Mode: rule.Enforce, AgentGroups: []string{""}}},
			Want:   field.ErrorList{field.Required(p.Child("agentGroups").Index(0), "a group name")},
		},
		"EmptyOptOutGroup": {
			Reason: "An empty opt-out group would match nobody and hide a typo.",
			In:     Config{Settings: gitops.Settings{Mode: rule.Enforce}, OptOutGroups: []string{"platform-admins", ""}},
			Want:   field.ErrorList{field.Required(p.Child("optOutGroups").Index(1), "a group name")},
		},
		"BadDefaultServiceAccount": {
			Reason: "The default service account is a name, not a user: kustomize-controller's flag takes the name alone.",
			In:     Config{Settings: gitops.Settings{Mode: rule.Enforce}, DefaultServiceAccount: "Flux_Applier"},
			Want: field.ErrorList{field.Invalid(p.Child("defaultServiceAccount"), "Flux_Applier",
				"a service account name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")},
		},
		"BadIgnoredFieldsPointer": {
			Reason: "A pointer that does not parse is named by its indexes.",
			In:     Config{Settings: gitops.Settings{Mode: rule.Enforce, IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas", "spec/replicas"}}}}},
			Want: field.ErrorList{field.Invalid(p.Child("ignoredFields").Index(0).Child("paths").Index(1), "spec/replicas",
				`not an RFC 6901 JSON pointer: a JSON pointer starts with "/"`)},
		},
		"EveryErrorAtOnce": {
			Reason: "All errors are reported together, in the order of the fields.",
			In: Config{
				Settings:              gitops.Settings{Mode: "block", AgentUsers: []string{""}, IgnoredFields: []gitops.IgnoredFields{{Kind: "ConfigMap", Paths: []string{""}}}},
				OptOutGroups:          []string{""},
				DefaultServiceAccount: "a..b",
			},
			Want: field.ErrorList{
				field.NotSupported(p.Child("mode"), rule.Mode("block"), []string{"enforce", "warn", "audit", "off"}),
				field.Required(p.Child("agentUsers").Index(0), "a user name"),
				field.Required(p.Child("optOutGroups").Index(0), "a group name"),
				field.Invalid(p.Child("defaultServiceAccount"), "a..b",
					"a service account name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
				field.Invalid(p.Child("ignoredFields").Index(0).Child("paths").Index(0), "", "the empty pointer is the whole object and would ignore every change"),
			},
		},
	}
	gitopstest.TestValidate(t, p, cases)
}

func TestValidateErrorNamesTheField(t *testing.T) {
	c := Config{Settings: gitops.Settings{Mode: rule.Enforce}, OptOutGroups: []string{"platform-admins", ""}}
	want := `rules.fluxguard.optOutGroups[1]: Required value: a group name`
	if got := c.Validate(field.NewPath("rules", "fluxguard")).ToAggregate().Error(); got != want {
		t.Errorf("the error names the field path:\ngot  %s\nwant %s", got, want)
	}
}
