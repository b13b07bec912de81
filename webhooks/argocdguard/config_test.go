package argocdguard

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/rule"
)

func TestConfig(t *testing.T) {
	ruletest.TestConfig(t, Name, map[string]ruletest.ConfigCase[Config]{
		"EmptyConfigGetsArgoCDsDefaults": {
			Reason: "An unconfigured rule enforces, trusts the application controller, knows argocd-server, and looks Applications up in argocd.",
			Want: Config{
				Settings:              gitops.Settings{Mode: rule.Enforce, AgentUsers: []string{argoController}, AgentGroups: []string{}},
				ServerUsers:           []string{argoServer},
				ControlPlaneNamespace: "argocd",
			},
		},
		"GivenSettingsReplaceTheDefaults": {
			Reason: "Lists that are set, even empty, are kept as they are; an Argo CD installed elsewhere is named by the operator.",
			Config: Config{
				Settings:              gitops.Settings{Mode: rule.Warn, AgentUsers: []string{"system:serviceaccount:gitops:argocd-application-controller"}, AgentGroups: []string{"argocd-controllers"}, IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas"}}}},
				ServerUsers:           []string{},
				ControlPlaneNamespace: "gitops",
				UIEditsAreGitOps:      true,
				TrackingLabel:         "app.kubernetes.io/instance",
				OptOutGroups:          []string{"platform-admins"},
			},
			Want: Config{
				Settings:              gitops.Settings{Mode: rule.Warn, AgentUsers: []string{"system:serviceaccount:gitops:argocd-application-controller"}, AgentGroups: []string{"argocd-controllers"}, IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas"}}}},
				ServerUsers:           []string{},
				ControlPlaneNamespace: "gitops",
				UIEditsAreGitOps:      true,
				TrackingLabel:         "app.kubernetes.io/instance",
				OptOutGroups:          []string{"platform-admins"},
			},
		},
		"BadEntriesAreNamedByPath": {
			Reason: "A typo must stop start-up with the field that holds it.",
			Config: Config{
				Settings:              gitops.Settings{Mode: "block", AgentUsers: []string{"a", ""}, AgentGroups: []string{""}, IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Paths: []string{"/spec/replicas", "spec", ""}}}},
				ServerUsers:           []string{""},
				OptOutGroups:          []string{"ok", ""},
				ControlPlaneNamespace: "Argo_CD",
				TrackingLabel:         "app.kubernetes.io/instance name",
			},
			Want: Config{
				Settings:              gitops.Settings{Mode: "block", AgentUsers: []string{"a", ""}, AgentGroups: []string{""}, IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Paths: []string{"/spec/replicas", "spec", ""}}}},
				ServerUsers:           []string{""},
				OptOutGroups:          []string{"ok", ""},
				ControlPlaneNamespace: "Argo_CD",
				TrackingLabel:         "app.kubernetes.io/instance name",
			},
			WantErrs: []string{
				`rules.argocdguard.mode: Unsupported value: "block": supported values: "enforce", "warn", "audit", "off"`,
				`rules.argocdguard.agentUsers[1]: Required value: a user name`,
				`rules.argocdguard.agentGroups[0]: Required value: a group name`,
				`rules.argocdguard.serverUsers[0]: Required value: a user name`,
				`rules.argocdguard.optOutGroups[1]: Required value: a group name`,
				`rules.argocdguard.controlPlaneNamespace: Invalid value: "Argo_CD": a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`rules.argocdguard.trackingLabel: Invalid value: "app.kubernetes.io/instance name": a label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`rules.argocdguard.ignoredFields[0].kind: Required value: the kind the paths belong to, e.g. Deployment`,
				`rules.argocdguard.ignoredFields[0].paths[1]: Invalid value: "spec": not an RFC 6901 JSON pointer: a JSON pointer starts with "/"`,
				`rules.argocdguard.ignoredFields[0].paths[2]: Invalid value: "": the empty pointer is the whole object and would ignore every change`,
			},
		},
	})
}

func TestWriters(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     Config
		want   rule.Identities
	}{
		"Default": {
			reason: "Only the application controller writes as Argo CD.",
			want:   rule.Identities{Users: []string{argoController}, Groups: []string{}},
		},
		"UIEditsAreGitOps": {
			reason: "uiEditsAreGitOps adds argocd-server's identities.",
			in:     Config{UIEditsAreGitOps: true},
			want:   rule.Identities{Users: []string{argoController, argoServer}, Groups: []string{}},
		},
		"ServerUsersAloneAreNotWriters": {
			reason: "Naming argocd-server's identities does not trust them.",
			in:     Config{ServerUsers: []string{"system:serviceaccount:gitops:argocd-server"}},
			want:   rule.Identities{Users: []string{argoController}, Groups: []string{}},
		},
		"ConfiguredIdentities": {
			reason: "Configured users and groups are the writers, with configured server users when trusted.",
			in: Config{
				Settings:         gitops.Settings{AgentUsers: []string{"controller"}, AgentGroups: []string{"argocd"}},
				ServerUsers:      []string{"server-a", "server-b"},
				UIEditsAreGitOps: true,
			},
			want: rule.Identities{Users: []string{"controller", "server-a", "server-b"}, Groups: []string{"argocd"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := tc.in
			c.Default()
			if diff := cmp.Diff(tc.want, c.writers()); diff != "" {
				t.Errorf("%s\nwriters(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestWritersLeaveTheConfiguredListAlone: the server users are appended
// to a copy, never into the spare room of the configured agentUsers.
func TestWritersLeaveTheConfiguredListAlone(t *testing.T) {
	agents := make([]string, 1, 4)
	agents[0] = "controller"
	c := Config{Settings: gitops.Settings{AgentUsers: agents}, UIEditsAreGitOps: true}
	c.Default()
	if got := c.writers().Users; !cmp.Equal(got, []string{"controller", argoServer}) {
		t.Errorf("writers().Users = %q", got)
	}
	if spare := agents[:2][1]; spare != "" {
		t.Errorf("writers() wrote %q into the spare room of the configured agentUsers", spare)
	}
}
