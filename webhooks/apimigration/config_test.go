package apimigration_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/apimigration"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/rule"
)

// TestConfig proves the settings load through Steward's configuration file:
// defaults, and errors that name the field path.
func TestConfig(t *testing.T) {
	const header = "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\n"
	newest := apimigration.NewestRelease()
	next := apimigration.Release{Major: newest.Major, Minor: newest.Minor + 1}
	var releases []string
	for _, r := range apimigration.Releases() {
		releases = append(releases, r.String())
	}
	known := strings.Join(releases, ", ")
	cases := map[string]struct {
		reason  string
		file    string
		want    apimigration.Config
		wantErr string
	}{
		"Defaults": {
			reason: "no section: enforce, and no pinned release (the server follows the cluster's Flux)",
			file:   header + "rules: {}\n",
			want:   apimigration.Config{Mode: rule.Enforce},
		},
		"TargetSet": {
			reason: "the target release is read as written",
			file:   header + "rules:\n  apimigration:\n    mode: warn\n    fluxVersion: \"2.8\"\n",
			want:   apimigration.Config{Mode: rule.Warn, FluxVersion: "2.8"},
		},
		"BadTarget": {
			reason:  "a target that is not a release stops start-up, naming the field",
			file:    header + "rules:\n  apimigration:\n    fluxVersion: latest\n",
			wantErr: `rules.apimigration.fluxVersion: Invalid value: "latest": not a Flux release`,
		},
		"TargetNewerThanTheTable": {
			reason:  "a release newer than the newest Steward knows is refused, listing those it knows: what it removes is not in the table",
			file:    header + "rules:\n  apimigration:\n    fluxVersion: \"" + next.String() + "\"\n",
			wantErr: `rules.apimigration.fluxVersion: Invalid value: "` + next.String() + `": newer than ` + newest.String() + `, the newest Flux release Steward knows (it knows ` + known + `; an older release is read as 2.6): upgrade Steward before pinning ` + next.String() + `, or leave fluxVersion unset`,
		},
		"TargetTheNewestRelease": {
			reason: "the newest release in the table is accepted, as written",
			file:   header + "rules:\n  apimigration:\n    fluxVersion: \"v" + newest.String() + ".1\"\n",
			want:   apimigration.Config{Mode: rule.Enforce, FluxVersion: apimigration.FluxRelease("v" + newest.String() + ".1")},
		},
		"TargetOlderThanTheTable": {
			reason: "an older release is accepted: it reads the table's oldest release, which removes none of its versions",
			file:   header + "rules:\n  apimigration:\n    fluxVersion: \"2.3\"\n",
			want:   apimigration.Config{Mode: rule.Enforce, FluxVersion: "2.3"},
		},
		"NumericTarget": {
			reason:  "an unquoted 2.10 is the number 2.1 in YAML, so numbers are refused",
			file:    header + "rules:\n  apimigration:\n    fluxVersion: 2.10\n",
			wantErr: `rules.apimigration.fluxVersion: 2.1 is not a string: quote the release`,
		},
		"BadMode": {
			reason:  "modes are checked like every rule's",
			file:    header + "rules:\n  apimigration:\n    mode: loud\n",
			wantErr: `rules.apimigration.mode: Unsupported value: "loud"`,
		},
		"UnknownField": {
			reason:  "a typo is an error, not a silent default",
			file:    header + "rules:\n  apimigration:\n    fluxRelease: \"2.8\"\n",
			wantErr: `unknown field "rules.apimigration.fluxRelease"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.file), "steward.yaml", webhooks.Sections())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s: error = %v, want it to contain %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, config.SettingsOf[apimigration.Config](c.Rules)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
