package installplanguard

import (
	"testing"

	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/rule"
)

func TestConfig(t *testing.T) {
	ruletest.TestConfig(t, Name, map[string]ruletest.ConfigCase[Config]{
		"EmptyConfigGetsDefaults": {
			Reason: "an unconfigured rule enforces and knows OLM and the cluster controllers",
			Want:   Config{Mode: rule.Enforce, OLMUsers: defaultOLMUsers, ClusterControllerUsers: defaultClusterControllerUsers},
		},
		"GivenUsersReplaceTheDefaults": {
			Reason: "an OLM installed elsewhere is named by the operator",
			Config: Config{Mode: rule.Warn, OLMUsers: []string{"system:serviceaccount:custom:olm"}},
			Want:   Config{Mode: rule.Warn, OLMUsers: []string{"system:serviceaccount:custom:olm"}, ClusterControllerUsers: defaultClusterControllerUsers},
		},
		"BadEntriesAreNamedByPath": {
			Reason: "a typo must stop start-up with the field that holds it",
			Config: Config{Mode: "block", OLMUsers: []string{"a", "a", " b", ""}},
			Want:   Config{Mode: "block", OLMUsers: []string{"a", "a", " b", ""}, ClusterControllerUsers: defaultClusterControllerUsers},
			WantErrs: []string{
				`rules.installplanguard.mode: Unsupported value: "block": supported values: "enforce", "warn", "audit", "off"`,
				`rules.installplanguard.olmUsers[1]: Duplicate value: "a"`,
				`rules.installplanguard.olmUsers[2]: Invalid value: " b": must not have surrounding spaces or control characters`,
				`rules.installplanguard.olmUsers[3]: Required value: a user name`,
			},
		},
	})
}
