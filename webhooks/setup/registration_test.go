package setup

import (
	"testing"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
)

// TestRegistrationOf: one configuration has one registration, and a change
// the manifests render (a rule turned off, Events no longer recorded)
// changes it.
func TestRegistrationOf(t *testing.T) {
	def := RegistrationOf(config.Defaults(webhooks.Sections()))
	if !def.Equal(RegistrationOf(config.Defaults(webhooks.Sections()))) {
		t.Error("the registrations of one configuration differ")
	}
	for _, file := range []string{
		"rules:\n  fleetguard:\n    mode: \"off\"\n",
		"recordEventsFor: none\n",
	} {
		c, err := config.Parse([]byte("apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\n"+file), "test.yaml", webhooks.Sections())
		if err != nil {
			t.Fatal(err)
		}
		if RegistrationOf(c).Equal(def) {
			t.Errorf("%s: the registration is the default configuration's", file)
		}
	}
}
