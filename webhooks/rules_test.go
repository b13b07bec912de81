package webhooks

import (
	"slices"
	"testing"

	"github.com/stewardhq/steward/webhooks/config"
)

// TestModeOffLeavesTheRuleOut: `mode: off`, unquoted (YAML reads it as
// false), turns the rule off, and Rules no longer builds it, so neither the
// server nor the manifests register it.
func TestModeOffLeavesTheRuleOut(t *testing.T) {
	for _, mode := range []string{"off", `"off"`} {
		c, err := config.Parse([]byte("apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules:\n  suspendnotice:\n    mode: "+mode+"\n"), "test.yaml", Sections())
		if err != nil {
			t.Fatalf("mode: %s: %v", mode, err)
		}
		var names []string
		for _, r := range Rules(c) {
			names = append(names, r.Rule.Spec().Name)
		}
		if slices.Contains(names, "suspendnotice") || len(names) != len(list)-1 {
			t.Errorf("mode: %s: Rules built %v; want every rule but suspendnotice", mode, names)
		}
	}
}

// TestEveryListedRuleHasASection proves the list alone decides the
// configuration's rules: each rule has its section, defaulted, under its
// name, and nothing else does.
func TestEveryListedRuleHasASection(t *testing.T) {
	c := config.Defaults(Sections())
	var names []string
	for _, e := range list {
		names = append(names, e.Name)
		if c.Rules[e.Name] == nil || c.Rules[e.Name].RuleMode() == "" {
			t.Errorf("rule %s has no defaulted section", e.Name)
		}
	}
	if len(c.Rules) != len(list) {
		t.Errorf("sections for %d rules, want one for each of %v", len(c.Rules), names)
	}
}
