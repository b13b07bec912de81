package rule_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/webhooks/rule"
)

func TestWebhookNamesAndPaths(t *testing.T) {
	type got struct{ Name, Path string }
	tests := map[string]struct {
		reason string
		typ    rule.Type
		suffix string
		want   got
	}{
		"MainValidatingEntry": {
			reason: "a rule's main entry is named and served after the rule alone",
			typ:    rule.Validating, want: got{"fleetguard.steward.dev", "/validate/fleetguard"},
		},
		"OtherValidatingEntry": {
			reason: "the other entries add their suffix to the name and to the path",
			typ:    rule.Validating, suffix: "scale", want: got{"fleetguard-scale.steward.dev", "/validate/fleetguard/scale"},
		},
		"MutatingEntry": {
			reason: "mutating entries are served under /mutate/",
			typ:    rule.Mutating, suffix: "events", want: got{"fleetguard-events.steward.dev", "/mutate/fleetguard/events"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := got{rule.WebhookName("fleetguard", tc.suffix), rule.Path(tc.typ, "fleetguard", tc.suffix)}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
