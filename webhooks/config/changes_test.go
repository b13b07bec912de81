package config_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
)

// TestChangedFieldsAndWithField proves changes are named by path and each
// can be applied alone.
func TestChangedFieldsAndWithField(t *testing.T) {
	next, err := config.Parse([]byte("apiVersion: "+config.APIVersion+"\nkind: "+config.Kind+`
exemptUsers: [alice]
rules:
  apimigration:
    fluxVersion: "2.8"
  fleetguard:
    agentGroups: [fleet]
`), "test", webhooks.Sections())
	if err != nil {
		t.Fatal(err)
	}
	old := config.Defaults(webhooks.Sections())
	changed := config.ChangedFields(old, next)
	want := []string{"exemptUsers", "rules.apimigration.fluxVersion", "rules.fleetguard.agentGroups"}
	if diff := cmp.Diff(want, changed); diff != "" {
		t.Fatalf("ChangedFields (-want +got):\n%s", diff)
	}
	for _, f := range changed {
		one, err := config.WithField(old, next, f, webhooks.Sections())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{f}, config.ChangedFields(old, one)); diff != "" {
			t.Errorf("WithField(%s) changes (-want +got):\n%s", f, diff)
		}
	}
}
