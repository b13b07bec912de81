package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
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
			_, err := config.Parse([]byte(header+tc.yaml), "test.yaml", webhooks.Sections())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s\nParse error = %v, want one containing %q", tc.reason, err, tc.wantErr)
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
			wantEvery: config.DefaultAuditInterval,
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
			wantEvery:    config.DefaultAuditInterval,
			wantDisabled: []string{"fleetguard", "suspendnotice"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := config.Parse([]byte(header+tc.yaml), "test.yaml", webhooks.Sections())
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if got := c.Audit.Every(); got != tc.wantEvery {
				t.Errorf("%s: Every() = %s, want %s", tc.reason, got, tc.wantEvery)
			}
			for r := range config.Defaults(webhooks.Sections()).Rules {
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
