package installplanguard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/rule"
)

func TestConfig(t *testing.T) {
	cases := map[string]struct {
		reason   string
		cfg      Config
		want     Config
		wantErrs []string
	}{
		"EmptyConfigGetsDefaults": {
			reason: "an unconfigured rule enforces and knows OLM and the cluster controllers",
			want:   Config{Mode: rule.Enforce, OLMUsers: DefaultOLMUsers, ClusterControllerUsers: DefaultClusterControllerUsers},
		},
		"GivenUsersReplaceTheDefaults": {
			reason: "an OLM installed elsewhere is named by the operator",
			cfg:    Config{Mode: rule.Warn, OLMUsers: []string{"system:serviceaccount:custom:olm"}},
			want:   Config{Mode: rule.Warn, OLMUsers: []string{"system:serviceaccount:custom:olm"}, ClusterControllerUsers: DefaultClusterControllerUsers},
		},
		"BadEntriesAreNamedByPath": {
			reason: "a typo must stop start-up with the field that holds it",
			cfg:    Config{Mode: "block", OLMUsers: []string{"a", "a", " b", ""}},
			want:   Config{Mode: "block", OLMUsers: []string{"a", "a", " b", ""}, ClusterControllerUsers: DefaultClusterControllerUsers},
			wantErrs: []string{
				`rules.installplanguard.mode: Unsupported value: "block": supported values: "enforce", "warn", "audit"`,
				`rules.installplanguard.olmUsers[1]: Duplicate value: "a"`,
				`rules.installplanguard.olmUsers[2]: Invalid value: " b": must not have surrounding spaces or control characters`,
				`rules.installplanguard.olmUsers[3]: Required value: a user name`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.cfg.Default()
			if diff := cmp.Diff(tc.want, tc.cfg); diff != "" {
				t.Errorf("%s\nDefault(): -want +got:\n%s", tc.reason, diff)
			}
			var got []string
			for _, e := range tc.cfg.Validate(field.NewPath("rules", Name)) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.wantErrs, got); diff != "" {
				t.Errorf("%s\nValidate(): -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
