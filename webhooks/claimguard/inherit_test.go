package claimguard

import (
	"testing"

	"github.com/stewardhq/steward/webhooks/rule"
)

// TestInheritSharesTheRunningRulesView proves a claimguard rebuilt from a
// reloaded configuration judges from the view the running rule's discovery
// loop keeps writing, with its own settings, and signals the same webhook
// rules syncer.
func TestInheritSharesTheRunningRulesView(t *testing.T) {
	running := New(Config{})
	heir := New(Config{RequireForegroundDelete: true})
	if err := heir.Inherit(running); err != nil {
		t.Fatal(err)
	}
	later := newCluster().s
	running.found.snap.Store(later) // discovery writes the running rule's view
	running.found.ready.Store(true)
	if heir.found.snap.Load() != later || !heir.found.ready.Load() {
		t.Error("the heir does not see the snapshot discovery wrote after the reload")
	}
	if !heir.cfg.RequireForegroundDelete || running.cfg.RequireForegroundDelete {
		t.Error("the heir does not judge with its own settings")
	}
	for _, wh := range heir.Spec().Webhooks {
		if wh.DynamicRules != nil && wh.DynamicRules.Changed != (<-chan struct{})(running.found.rulesChanged) {
			t.Errorf("entry %s signals another channel than the running syncer listens on", wh.Name)
		}
	}
	if err := heir.Inherit(otherRule{}); err == nil {
		t.Error("inheriting from another rule's type succeeded")
	}
}

type otherRule struct{ rule.Rule }
