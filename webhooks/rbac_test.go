package webhooks

import (
	"testing"

	"github.com/stewardhq/steward/webhooks/config"
)

// TestEventsRBAC: recording Events for refused writes is granted unless
// the configuration records none.
func TestEventsRBAC(t *testing.T) {
	if len(EventsRBAC(config.Defaults(Sections()))) == 0 {
		t.Error("the default configuration records Events but declares no RBAC for them")
	}
	c, err := config.Parse([]byte("apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrecordEventsFor: none\n"), "test.yaml", Sections())
	if err != nil {
		t.Fatal(err)
	}
	if got := EventsRBAC(c); got != nil {
		t.Errorf("recordEventsFor: none still declares %v", got)
	}
}
