package webhooks

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfigRefusesBadInputNamingTheField(t *testing.T) {
	tests := map[string]struct {
		reason  string
		yaml    string
		wantErr string
	}{
		"EmptyFile": {
			reason:  "an empty file is a mistake, not a request for defaults",
			yaml:    "",
			wantErr: "is empty",
		},
		"UnknownField": {
			reason:  "a typo must not silently fall back to a default",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nbreakGlasGroup: ops\n",
			wantErr: `unknown field "breakGlasGroup"`,
		},
		"WrongAPIVersion": {
			reason:  "the header identifies the format",
			yaml:    "apiVersion: v1\nkind: StewardConfiguration\n",
			wantErr: "apiVersion: Unsupported value: \"v1\"",
		},
		"WrongKind": {
			reason:  "the header identifies the format",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: Config\n",
			wantErr: "kind: Unsupported value: \"Config\"",
		},
		"UnknownNestedFieldNamesItsPath": {
			reason:  "an unknown field inside a rule's section is reported with its full path",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules:\n  fleetguard:\n    agentUser: [x]\n",
			wantErr: `unknown field "rules.fleetguard.agentUser"`,
		},
		"KeysAreCaseSensitive": {
			reason:  "a key in the wrong case is not silently accepted",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nBreakGlassGroup: ops\n",
			wantErr: `unknown field "BreakGlassGroup"`,
		},
		"DuplicateKey": {
			reason:  "a key given twice is ambiguous",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nbreakGlassGroup: a\nbreakGlassGroup: b\n",
			wantErr: `breakGlassGroup`,
		},
		"InvalidRuleMode": {
			reason:  "a rule's invalid setting is reported with its full path",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules:\n  fleetguard:\n    mode: block\n",
			wantErr: `rules.fleetguard.mode: Unsupported value: "block"`,
		},
		"NotYAML": {
			reason:  "malformed YAML names the file",
			yaml:    "apiVersion: [",
			wantErr: "configuration test.yaml:",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.yaml), "test.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: got error %v, want one containing %q", tc.reason, err, tc.wantErr)
			}
		})
	}
}

func TestParseConfigDefaultsWhatIsUnset(t *testing.T) {
	got, err := ParseConfig([]byte("apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nexemptUsers: [ci-bot]\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.ExemptUsers = []string{"ci-bot"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a minimal file gets every default (-want +got):\n%s", diff)
	}
}

func TestDefaultConfigIsValid(t *testing.T) {
	c := DefaultConfig()
	if errs := c.Validate(); len(errs) > 0 {
		t.Errorf("the default configuration must pass its own validation: %v", errs)
	}
}
