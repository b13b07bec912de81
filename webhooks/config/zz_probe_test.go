package config_test

import (
	"fmt"
	"testing"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
)

func TestZZProbe(t *testing.T) {
	h := "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules:\n"
	for _, y := range []string{
		"  fleetguard:\n    agentUsers: [a]\n    agentUsers: [b]\n",
		"  fluxguard:\n    mode: 5\n",
		"  fluxguard:\n    ignoredFields: [{kind: 3}]\n",
		"  argocdguard:\n    ignoredFields: 3\n",
		"  argocdguard:\n    undeclaredFields: [x]\n",
		"  argocdguard:\n    agentGroups: [\"\"]\n    serverUsers: [\"\"]\n    trackingLabel: \"a b\"\n    controlPlaneNamespace: X\n    undeclaredFields: q\n    ignoredFields: [{}]\n    optOutGroups: [\"\"]\n    mode: x\n",
		"  fluxguard:\n    agentGroups: [\"\"]\n    defaultServiceAccount: \"A_\"\n    overrideManagers: [\"\"]\n    undeclaredFields: q\n    ignoredFields: [{}]\n    optOutGroups: [\"\"]\n    mode: x\n    agentUsers: [\"\"]\n",
		"  fleetguard:\n    agentGroups: [\"\"]\n    undeclaredFields: q\n    ignoredFields: [{}]\n    mode: x\n    agentUsers: [\"\"]\n    bogus: 1\n",
	} {
		_, err := config.Parse([]byte(h+y), "p.yaml", webhooks.Sections())
		fmt.Printf("%v\n---\n", err)
	}
	c, _ := config.Parse([]byte(h+"  fluxguard: {}\n"), "p.yaml", webhooks.Sections())
	fmt.Printf("%+v\n", c.Rules["fluxguard"])
}
