package suspendnotice

import (
	"testing"

	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/rule"
)

func TestConfig(t *testing.T) {
	ruletest.TestConfig(t, Name, map[string]ruletest.ConfigCase[Config]{
		"EmptyConfigGetsDefaults": {
			Reason: "an unconfigured rule enforces and knows Flux's controllers",
			Want:   Config{Mode: rule.Enforce, Controllers: defaultControllers},
		},
		"GivenControllersReplaceTheDefaults": {
			Reason: "a renamed controller is named by the operator",
			Config: Config{Mode: rule.Audit, Controllers: []string{"kustomize-controller-shard1"}},
			Want:   Config{Mode: rule.Audit, Controllers: []string{"kustomize-controller-shard1"}},
		},
		"BadEntriesAreNamedByPath": {
			Reason: "a typo must stop start-up with the field that holds it",
			Config: Config{Mode: "on", Controllers: []string{"a", "a", "b ", ""}},
			Want:   Config{Mode: "on", Controllers: []string{"a", "a", "b ", ""}},
			WantErrs: []string{
				`rules.suspendnotice.mode: Unsupported value: "on": supported values: "enforce", "warn", "audit", "off"`,
				`rules.suspendnotice.controllers[1]: Duplicate value: "a"`,
				`rules.suspendnotice.controllers[2]: Invalid value: "b ": must not have surrounding spaces`,
				`rules.suspendnotice.controllers[3]: Required value: a controller name`,
			},
		},
	})
}
