package suspendnotice

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
			reason: "an unconfigured rule enforces and knows Flux's controllers",
			want:   Config{Mode: rule.Enforce, Controllers: DefaultControllers},
		},
		"GivenControllersReplaceTheDefaults": {
			reason: "a renamed controller is named by the operator",
			cfg:    Config{Mode: rule.Audit, Controllers: []string{"kustomize-controller-shard1"}},
			want:   Config{Mode: rule.Audit, Controllers: []string{"kustomize-controller-shard1"}},
		},
		"BadEntriesAreNamedByPath": {
			reason: "a typo must stop start-up with the field that holds it",
			cfg:    Config{Mode: "on", Controllers: []string{"a", "a", "b ", ""}},
			want:   Config{Mode: "on", Controllers: []string{"a", "a", "b ", ""}},
			wantErrs: []string{
				`rules.suspendnotice.mode: Unsupported value: "on": supported values: "enforce", "warn", "audit"`,
				`rules.suspendnotice.controllers[1]: Duplicate value: "a"`,
				`rules.suspendnotice.controllers[2]: Invalid value: "b ": must not have surrounding spaces`,
				`rules.suspendnotice.controllers[3]: Required value: a controller name`,
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
