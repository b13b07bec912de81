package ruletest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Config is what a rule's Config pointer offers the configuration loader.
type Config[C any] interface {
	*C
	Default()
	Validate(p *field.Path) field.ErrorList
}

// ConfigCase is one rule configuration as the file gives it (Config), what
// Default makes of it (Want), and the text of every error Validate reports
// for the defaulted value (WantErrs), in order.
type ConfigCase[C any] struct {
	Reason   string
	Config   C
	Want     C
	WantErrs []string
}

// TestConfig runs each case as a subtest: it defaults the case's Config,
// compares it with Want, then validates it at rules.<rule> and compares the
// errors' text with WantErrs. The text is compared because it is what an
// operator reads: it must name the field path.
func TestConfig[C any, P Config[C]](t *testing.T, rule string, cases map[string]ConfigCase[C]) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := tc.Config
			P(&cfg).Default()
			if diff := cmp.Diff(tc.Want, cfg); diff != "" {
				t.Errorf("%s\nDefault(): -want +got:\n%s", tc.Reason, diff)
			}
			var got []string
			for _, e := range P(&cfg).Validate(field.NewPath("rules", rule)) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.WantErrs, got); diff != "" {
				t.Errorf("%s\nValidate(): -want +got:\n%s", tc.Reason, diff)
			}
		})
	}
}
