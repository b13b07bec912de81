package webhooks

import (
	"testing"

	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

// TestEveryStatefulRuleCanTakeNewSettings proves every rule with state
// from the cluster can be rebuilt from a reloaded configuration and take
// over the running rule's state, so no rule silently keeps its old
// settings after a reload.
func TestEveryStatefulRuleCanTakeNewSettings(t *testing.T) {
	running := Rules(config.Defaults(Sections()))
	next, err := Successors(config.Defaults(Sections()), running)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range running {
		if _, stateful := c.Rule.(clustercache.ManagerSetup); stateful {
			if _, ok := c.Rule.(rule.Inheritor); !ok {
				t.Errorf("rule %s has state from the cluster but is no rule.Inheritor", c.Name)
			}
		}
		if next[i].Name != c.Name || next[i].Rule == nil || next[i].Rule == c.Rule {
			t.Errorf("successor %d of %s: %+v, want a new instance of the same rule", i, c.Name, next[i])
		}
	}
}

// TestSuccessorsOfARuleTurnedOff proves a rule the new configuration turns
// off gets no successor, and the rest do.
func TestSuccessorsOfARuleTurnedOff(t *testing.T) {
	cfg, err := config.Parse([]byte("apiVersion: "+config.APIVersion+"\nkind: "+config.Kind+"\nrules:\n  fleetguard:\n    mode: off\n"), "test", Sections())
	if err != nil {
		t.Fatal(err)
	}
	next, err := Successors(cfg, Rules(config.Defaults(Sections())))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range next {
		if off := c.Rule == nil; off != (c.Name == "fleetguard") || (off && c.Mode != rule.Off) {
			t.Errorf("successor of %s: rule %v, mode %s", c.Name, c.Rule, c.Mode)
		}
	}
}
