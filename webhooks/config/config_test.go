package config_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
)

func TestParseRefusesBadInputNamingTheField(t *testing.T) {
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
		"ModeOnIsNoMode": {
			reason:  "YAML reads an unquoted on as true, which is no mode",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules:\n  fleetguard:\n    mode: on\n",
			wantErr: "a mode is one of enforce, warn, audit or off, not true",
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
		"UnknownRecordEventsFor": {
			reason:  "whose refusals get Events is one of the known values, named by its field",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrecordEventsFor: everyone\n",
			wantErr: `recordEventsFor: Unsupported value: "everyone": supported values: "serviceAccounts", "none"`,
		},
		"InvalidRuleMode": {
			reason:  "a rule's invalid setting is reported with its full path",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules:\n  fleetguard:\n    mode: block\n",
			wantErr: `rules.fleetguard.mode: Unsupported value: "block"`,
		},
		"UnknownRuleNamesItsPath": {
			reason:  "a section for a rule that does not exist is a typo, reported with its path",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules:\n  fleetgaurd: {}\n",
			wantErr: `unknown field "rules.fleetgaurd"`,
		},
		"RuleSectionOfTheWrongType": {
			reason:  "a rule's section that is not a mapping names the section",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules:\n  fleetguard: [warn]\n",
			wantErr: `Go struct field RulesConfig.rules.fleetguard of type fleetguard.Config`,
		},
		"WrongTypeInARuleNamesItsPath": {
			reason:  "a setting of the wrong type is named by its full path",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules:\n  fleetguard:\n    agentUsers: 5\n",
			wantErr: `Go struct field Config.rules.fleetguard.agentUsers of type []string`,
		},
		"WrongTypeAtTheTopNamesItsField": {
			reason:  "a top-level setting of the wrong type is named as the file's field",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nbreakGlassGroup: [ops]\n",
			wantErr: `Go struct field Config.breakGlassGroup of type string`,
		},
		"RulesOfTheWrongType": {
			reason:  "a rules section that is not a mapping names the section",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules: [fleetguard]\n",
			wantErr: `Go struct field Config.rules of type config.RulesConfig`,
		},
		"EveryTypoIsReported": {
			reason:  "typos at the top and inside rules are reported together",
			yaml:    "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nbreakGlasGroup: ops\nrules:\n  fleetguard:\n    agentUser: [x]\n",
			wantErr: "unknown field \"breakGlasGroup\"\nunknown field \"rules.fleetguard.agentUser\"",
		},
		"NotYAML": {
			reason:  "malformed YAML names the file",
			yaml:    "apiVersion: [",
			wantErr: "configuration test.yaml:",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.yaml), "test.yaml", webhooks.Sections())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: got error %v, want one containing %q", tc.reason, err, tc.wantErr)
			}
		})
	}
}

func TestParseDefaultsWhatIsUnset(t *testing.T) {
	got, err := config.Parse([]byte("apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nexemptUsers: [ci-bot]\n"), "test.yaml", webhooks.Sections())
	if err != nil {
		t.Fatal(err)
	}
	want := config.Defaults(webhooks.Sections())
	want.ExemptUsers = []string{"ci-bot"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a minimal file gets every default (-want +got):\n%s", diff)
	}
}

func TestDefaultsAreValid(t *testing.T) {
	c := config.Defaults(webhooks.Sections())
	if errs := c.Validate(webhooks.Sections()); len(errs) > 0 {
		t.Errorf("the default configuration must pass its own validation: %v", errs)
	}
}

// TestRecordEventsFor: Events for service accounts' refusals are on unless
// the file says none (webhooks' TestEventsRBAC: turning them off also drops
// their RBAC).
func TestRecordEventsFor(t *testing.T) {
	if got := config.Defaults(webhooks.Sections()).RecordEventsFor; got != config.EventsForServiceAccounts {
		t.Errorf("default recordEventsFor = %q, want %q", got, config.EventsForServiceAccounts)
	}
	c, err := config.Parse([]byte("apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrecordEventsFor: none\n"), "test.yaml", webhooks.Sections())
	if err != nil {
		t.Fatal(err)
	}
	if c.RecordEventsFor != config.EventsForNone {
		t.Errorf("recordEventsFor = %q, want none", c.RecordEventsFor)
	}
}

// TestReadingNeedsTheRulesSections: the reader knows only the sections it
// is handed; without them reading a file is an error that says what is
// missing, never a panic, and a section it was not handed is unknown.
func TestReadingNeedsTheRulesSections(t *testing.T) {
	const header = "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\n"
	var fleetguardOnly config.Sections
	for _, s := range webhooks.Sections() {
		if s.Name == "fleetguard" {
			fleetguardOnly = append(fleetguardOnly, s)
		}
	}
	tests := map[string]struct {
		reason  string
		yaml    string
		rules   config.Sections
		wantErr string
	}{
		"NoSectionsMinimalFile": {
			reason:  "even a file without a rules section needs the sections to default every rule",
			yaml:    header,
			wantErr: "configuration test.yaml: no rules' sections to read the rules section with",
		},
		"NoSectionsWithRules": {
			reason:  "a rules section read without the sections is an error, not a panic",
			yaml:    header + "rules:\n  fleetguard:\n    mode: warn\n",
			rules:   config.Sections{},
			wantErr: "configuration test.yaml: no rules' sections to read the rules section with",
		},
		"SectionNotHandedIsUnknown": {
			reason:  "the reader knows only the sections it is handed",
			yaml:    header + "rules:\n  claimguard:\n    mode: warn\n",
			rules:   fleetguardOnly,
			wantErr: `unknown field "rules.claimguard"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.yaml), "test.yaml", tc.rules)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: got error %v, want one containing %q", tc.reason, err, tc.wantErr)
			}
		})
	}
	if _, err := config.Decode([]byte(`{"apiVersion":"config.steward.dev/v1alpha1","kind":"StewardConfiguration"}`), nil); err == nil {
		t.Error("decoding without the rules' sections must be an error")
	}
	if len(fleetguardOnly) != 1 {
		t.Fatalf("the rule list has %d fleetguard sections, want 1", len(fleetguardOnly))
	}
	c, err := config.Parse([]byte(header), "test.yaml", fleetguardOnly)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"fleetguard"}, slices.Sorted(maps.Keys(c.Rules))); diff != "" {
		t.Errorf("the defaults hold a section for each section handed, no more (-want +got):\n%s", diff)
	}
}
