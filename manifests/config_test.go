package manifests

import (
	"strings"
	"testing"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
)

// TestRenderFollowsTheConfiguration renders for a configuration that adds a
// GitOps agent and turns claimguard off, and checks the install says so:
// the agent is in fleetguard's matchConditions (so its writes never reach
// Steward), claimguard has no webhook entry, aggregated role or XRD access,
// and the ConfigMap Steward reads is that configuration.
func TestRenderFollowsTheConfiguration(t *testing.T) {
	cfg, err := config.Parse([]byte(`apiVersion: config.steward.dev/v1alpha1
kind: StewardConfiguration
rules:
  claimguard:
    mode: off
  fleetguard:
    agentUsers: ["system:serviceaccount:gitops:deployer"]
`), "test", webhooks.Sections())
	if err != nil {
		t.Fatal(err)
	}
	files, err := Render(Options{Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	webhooksYAML := string(files["base/webhooks.yaml"])
	if !strings.Contains(webhooksYAML, `"system:serviceaccount:gitops:deployer"`) {
		t.Errorf("fleetguard's matchConditions do not exempt the configured agent:\n%s", webhooksYAML)
	}
	for path, data := range files {
		// The ConfigMap names it to turn it off; the monitoring queries
		// of its metrics simply find none.
		if strings.Contains(string(data), "claimguard") && path != "base/config.yaml" && !strings.HasPrefix(path, "monitoring/") {
			t.Errorf("%s still mentions claimguard, which the configuration turns off", path)
		}
	}
	if rbac := string(files["base/rbac.yaml"]); strings.Contains(rbac, "compositeresourcedefinitions") {
		t.Errorf("the ClusterRole still reads XRDs for claimguard:\n%s", rbac)
	}
	if config := string(files["base/config.yaml"]); !strings.Contains(config, "mode: \"off\"") || !strings.Contains(config, "gitops:deployer") {
		t.Errorf("the ConfigMap does not hold the configuration:\n%s", config)
	}

	defaults, err := Render(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(defaults["base/webhooks.yaml"]), "claimguard.steward.dev") {
		t.Fatal("the default rendering has no claimguard entry: the test above proves nothing")
	}
}
