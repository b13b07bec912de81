package webhooks

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

// TestEveryStatefulRuleCanTakeNewSettings proves every rule with state
// from the cluster can be rebuilt from a reloaded configuration and take
// over the running rule's state, so no rule silently keeps its old
// settings after a reload.
func TestEveryStatefulRuleCanTakeNewSettings(t *testing.T) {
	running := Rules(DefaultConfig())
	next, err := Successors(DefaultConfig(), running)
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
	cfg, err := ParseConfig([]byte("apiVersion: "+ConfigAPIVersion+"\nkind: "+ConfigKind+"\nrules:\n  fleetguard:\n    mode: off\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	next, err := Successors(cfg, Rules(DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range next {
		if off := c.Rule == nil; off != (c.Name == "fleetguard") || (off && c.Mode != rule.Off) {
			t.Errorf("successor of %s: rule %v, mode %s", c.Name, c.Rule, c.Mode)
		}
	}
}

// TestChangedFieldsAndWithField proves changes are named by path and each
// can be applied alone.
func TestChangedFieldsAndWithField(t *testing.T) {
	next, err := ParseConfig([]byte("apiVersion: "+ConfigAPIVersion+"\nkind: "+ConfigKind+`
exemptUsers: [alice]
rules:
  apimigration:
    fluxVersion: "2.8"
  fleetguard:
    agentGroups: [fleet]
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	old := DefaultConfig()
	changed := ChangedFields(old, next)
	want := []string{"exemptUsers", "rules.apimigration.fluxVersion", "rules.fleetguard.agentGroups"}
	if diff := cmp.Diff(want, changed); diff != "" {
		t.Fatalf("ChangedFields (-want +got):\n%s", diff)
	}
	for _, f := range changed {
		one, err := WithField(old, next, f)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{f}, ChangedFields(old, one)); diff != "" {
			t.Errorf("WithField(%s) changes (-want +got):\n%s", f, diff)
		}
	}
}
