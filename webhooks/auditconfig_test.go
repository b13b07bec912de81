package webhooks

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

const header = "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\n"

func TestAuditConfigRefusesBadInputNamingTheField(t *testing.T) {
	tests := map[string]struct {
		reason  string
		yaml    string
		wantErr string
	}{
		"NegativeInterval": {
			reason:  "a negative interval means nothing",
			yaml:    "audit:\n  interval: -1m\n",
			wantErr: `audit.interval: Invalid value: "-1m0s": must be 0 (the audit is off) or at least 10s`,
		},
		"IntervalTooShort": {
			reason:  "a pass every second would only load the API server",
			yaml:    "audit:\n  interval: 5s\n",
			wantErr: `audit.interval: Invalid value: "5s"`,
		},
		"IntervalNotADuration": {
			reason:  "an interval is a Go duration",
			yaml:    "audit:\n  interval: five minutes\n",
			wantErr: `a duration is a string such as "5m"`,
		},
		"IntervalANumber": {
			reason:  "a bare number other than 0 has no unit",
			yaml:    "audit:\n  interval: 300\n",
			wantErr: `not 300`,
		},
		"UnknownDisabledRule": {
			reason:  "a disabled rule that does not exist is a typo",
			yaml:    "audit:\n  disabledRules: [suspendnotise]\n",
			wantErr: `audit.disabledRules[0]: Unsupported value: "suspendnotise"`,
		},
		"DuplicateDisabledRule": {
			reason:  "a rule listed twice is a mistake",
			yaml:    "audit:\n  disabledRules: [fleetguard, fleetguard]\n",
			wantErr: `audit.disabledRules[1]: Duplicate value: "fleetguard"`,
		},
		"UnknownAuditField": {
			reason:  "a misspelt key is refused with its path",
			yaml:    "audit:\n  intervall: 1m\n",
			wantErr: `unknown field "audit.intervall"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig([]byte(header+tc.yaml), "test.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s\nParseConfig error = %v, want one containing %q", tc.reason, err, tc.wantErr)
			}
		})
	}
}

func TestAuditConfig(t *testing.T) {
	tests := map[string]struct {
		reason       string
		yaml         string
		wantEvery    time.Duration
		wantDisabled []string
	}{
		"Default": {
			reason:    "without a section the audit runs every five minutes",
			wantEvery: DefaultAuditInterval,
		},
		"ZeroTurnsItOff": {
			reason:    "0 turns the audit off",
			yaml:      "audit:\n  interval: 0\n",
			wantEvery: 0,
		},
		"ZeroAsADuration": {
			reason:    "0s turns it off too",
			yaml:      "audit:\n  interval: 0s\n",
			wantEvery: 0,
		},
		"Shortest": {
			reason:    "10s is the shortest interval accepted",
			yaml:      "audit:\n  interval: 10s\n",
			wantEvery: 10 * time.Second,
		},
		"DisabledRules": {
			reason:       "rules can be left out of the reports",
			yaml:         "audit:\n  disabledRules: [fleetguard, suspendnotice]\n",
			wantEvery:    DefaultAuditInterval,
			wantDisabled: []string{"fleetguard", "suspendnotice"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := ParseConfig([]byte(header+tc.yaml), "test.yaml")
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if got := c.Audit.Every(); got != tc.wantEvery {
				t.Errorf("%s: Every() = %s, want %s", tc.reason, got, tc.wantEvery)
			}
			for _, r := range RuleNames() {
				want := false
				for _, d := range tc.wantDisabled {
					want = want || d == r
				}
				if got := c.Audit.Disabled(r); got != want {
					t.Errorf("%s: Disabled(%s) = %v, want %v", tc.reason, r, got, want)
				}
			}
		})
	}
}

// auditingRule is a rule that can audit.
type auditingRule struct{ plainRule }

func (auditingRule) Audit(context.Context, client.Reader) ([]rule.Finding, error) { return nil, nil }

// plainRule cannot audit.
type plainRule struct{}

func (plainRule) Handle(context.Context, *rule.Request) admission.Response {
	return admission.Allowed("")
}
func (plainRule) Spec() rule.Spec { return rule.Spec{} }

// TestAuditorsAreTheRulesOnThatAudit: the audit asks the rules that can
// audit, in the list's order, but not one turned off or disabled in the
// audit section.
func TestAuditorsAreTheRulesOnThatAudit(t *testing.T) {
	rules := []Configured{
		{Name: "suspendnotice", Rule: auditingRule{}, Mode: rule.Enforce},
		{Name: "installplanguard", Rule: auditingRule{}, Mode: rule.Warn},
		{Name: "fleetguard", Rule: auditingRule{}, Mode: rule.Enforce},
		{Name: "claimguard", Rule: auditingRule{}, Mode: rule.Off},
		{Name: "apimigration", Rule: plainRule{}, Mode: rule.Enforce},
	}
	cfg := AuditConfig{DisabledRules: []string{"fleetguard"}}
	var got []string
	for _, a := range cfg.Auditors(rules) {
		got = append(got, a.Name)
	}
	if diff := cmp.Diff([]string{"suspendnotice", "installplanguard"}, got); diff != "" {
		t.Errorf("Auditors: -want +got:\n%s", diff)
	}
}
