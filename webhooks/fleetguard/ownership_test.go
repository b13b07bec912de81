package fleetguard

import "testing"

func TestBundleDeployment(t *testing.T) {
	cases := map[string]struct {
		reason string
		id     string
		want   string
	}{
		"FleetID":          {reason: "Fleet's agent builds ids as \"default-\" + bundle deployment name.", id: "default-web-app", want: "web-app"},
		"AgentScope":       {reason: "With an agent scope, Fleet appends it; it cannot be told apart and stays in the name.", id: "default-mcc-harvester-cattle-fleet-local-system", want: "mcc-harvester-cattle-fleet-local-system"},
		"OtherPrefix":      {reason: "An id not built by the agent is shown as it is.", id: "fleet-agent-bootstrap", want: "fleet-agent-bootstrap"},
		"Empty":            {reason: "No id, no bundle deployment.", id: "", want: ""},
		"PlaceholderDash":  {reason: "\"-\" carries no name.", id: "-", want: ""},
		"OnlyPrefixRemain": {reason: "The prefix alone names nothing.", id: "default-", want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := bundleDeployment(tc.id); got != tc.want {
				t.Errorf("%s\nbundleDeployment(%q) = %q, want %q", tc.reason, tc.id, got, tc.want)
			}
		})
	}
}
