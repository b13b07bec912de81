package check

import (
	"strings"
	"testing"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/apimigration"
	"github.com/stewardhq/steward/webhooks/config"
)

func TestTargetIsTheFlagElseTheConfigurationElseTheNewestRelease(t *testing.T) {
	cfg, err := config.Parse([]byte("apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules:\n  apimigration:\n    fluxVersion: \"2.6\"\n"), "config.yaml", webhooks.Sections())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg         *config.Config
		fluxVersion string
		want        string
	}{
		{nil, "", apimigration.NewestRelease().String()},
		{&cfg, "", "2.6"},
		{&cfg, "2.7", "2.7"},
		{nil, "2.7", "2.7"},
	} {
		got, err := Target(tc.cfg, tc.fluxVersion)
		if err != nil || got.String() != tc.want {
			t.Errorf("Target(config %v, %q) = %s, %v; want %s", tc.cfg != nil, tc.fluxVersion, got, err, tc.want)
		}
	}
	if _, err := Target(&cfg, "2.x"); err == nil || !strings.HasPrefix(err.Error(), `--flux-version "2.x": `) {
		t.Errorf("Target(2.x) = %v, want an error naming --flux-version", err)
	}
}
