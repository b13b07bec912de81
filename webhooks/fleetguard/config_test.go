package fleetguard

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
			Reason: "An empty section enforces and trusts Fleet's agent identities.",
			In:     Config{},
			Want:   Config{Settings: gitops.Settings{Mode: rule.Enforce, AgentUsers: defaultAgentUsers, AgentGroups: defaultAgentGroups}},
		},
		"ExplicitListsReplaceDefaults": {
			Reason: "Lists that are set, even empty, are kept as they are.",
			In:     Config{Settings: gitops.Settings{Mode: rule.Warn, AgentUsers: []string{"u"}, AgentGroups: []string{}}},
			Want:   Config{Settings: gitops.Settings{Mode: rule.Warn, AgentUsers: []string{"u"}, AgentGroups: []string{}}},
		},
	}
	gitopstest.TestDefault(t, cases)
}

func TestConfigValidate(t *testing.T) {
	p := field.NewPath("rules", "fleetguard")
	cases := map[string]gitopstest.ValidateCase[Config]{
		"Valid": {
			Reason: "Escaped pointers and the core group are fine.",
			In: Config{
				Settings: gitops.Settings{Mode: rule.Audit, IgnoredFields: []IgnoredFields{
					{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas", "/spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt"}},
					{Group: "", Kind: "ConfigMap", Paths: []string{"/data/generated"}},
				}},
			},
		},
		"BadMode": {
			Reason: "Only enforce, warn and audit exist.",
			In:     Config{Settings: gitops.Settings{Mode: "block"}},
			Want:   field.ErrorList{field.NotSupported(p.Child("mode"), rule.Mode("block"), []string{"enforce", "warn", "audit", "off"})},
		},
		"BadPointersAreNamedByPath": {
			Reason: "Each invalid pointer is reported at its own index.",
			In: Config{
				Settings: gitops.Settings{Mode: rule.Enforce, IgnoredFields: []IgnoredFields{
					{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas", "spec/template", "/a~2"}},
				}},
			},
			Want: field.ErrorList{
				field.Invalid(p.Child("ignoredFields").Index(0).Child("paths").Index(1), "spec/template", `not an RFC 6901 JSON pointer: a JSON pointer starts with "/"`),
				field.Invalid(p.Child("ignoredFields").Index(0).Child("paths").Index(2), "/a~2", `not an RFC 6901 JSON pointer: "~" must be followed by "0" or "1" (token "a~2")`),
			},
		},
		"WholeObjectPointer": {
			Reason: "The empty pointer would ignore every change.",
			In:     Config{Settings: gitops.Settings{Mode: rule.Enforce, IgnoredFields: []IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{""}}}}},
			Want: field.ErrorList{
				field.Invalid(p.Child("ignoredFields").Index(0).Child("paths").Index(0), "", "the empty pointer is the whole object and would ignore every change"),
			},
		},
		"MissingKindAndPaths": {
			Reason: "An entry needs a kind and at least one path.",
			In:     Config{Settings: gitops.Settings{Mode: rule.Enforce, IgnoredFields: []IgnoredFields{{Group: "apps"}}}},
			Want: field.ErrorList{
				field.Required(p.Child("ignoredFields").Index(0).Child("kind"), "the kind the paths belong to, e.g. Deployment"),
				field.Required(p.Child("ignoredFields").Index(0).Child("paths"), "at least one JSON pointer, e.g. /spec/replicas"),
			},
		},
		"EmptyIdentities": {
			Reason: "An empty user or group name is a mistake.",
			In:     Config{Settings: gitops.Settings{Mode: rule.Enforce, AgentUsers: []string{"a", ""}, AgentGroups: []string{""}}},
			Want: field.ErrorList{
				field.Required(p.Child("agentUsers").Index(1), "a user name"),
				field.Required(p.Child("agentGroups").Index(0), "a group name"),
			},
		},
	}
	gitopstest.TestValidate(t, p, cases)
}

func TestValidateErrorNamesTheField(t *testing.T) {
	c := Config{Settings: gitops.Settings{Mode: rule.Enforce, IgnoredFields: []IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas", "spec"}}}}}
	errs := c.Validate(field.NewPath("rules", "fleetguard"))
	want := `rules.fleetguard.ignoredFields[0].paths[1]: Invalid value: "spec": not an RFC 6901 JSON pointer: a JSON pointer starts with "/"`
	if got := errs.ToAggregate().Error(); got != want {
		t.Errorf("the error names the field path:\ngot  %s\nwant %s", got, want)
	}
}
