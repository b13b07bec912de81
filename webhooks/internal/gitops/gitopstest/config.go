package gitopstest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultCase is a case of a guard's Config Default test: In, once
// defaulted, is Want.
type DefaultCase[C any] struct {
	Reason   string
	In, Want C
}

// TestDefault runs a guard's Config Default cases, each failing with its
// reason.
func TestDefault[C any, P interface {
	*C
	Default()
}](t *testing.T, cases map[string]DefaultCase[C]) {
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.In
			P(&got).Default()
			if diff := cmp.Diff(tc.Want, got); diff != "" {
				t.Errorf("%s\nDefault(): -want, +got:\n%s", tc.Reason, diff)
			}
		})
	}
}

// ValidateCase is a case of a guard's Config Validate test: In reports
// Want.
type ValidateCase[C any] struct {
	Reason string
	In     C
	Want   field.ErrorList
}

// TestValidate runs a guard's Config Validate cases, validated at p, each
// failing with its reason.
func TestValidate[C any, P interface {
	*C
	Validate(*field.Path) field.ErrorList
}](t *testing.T, p *field.Path, cases map[string]ValidateCase[C]) {
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.Want, P(&tc.In).Validate(p)); diff != "" {
				t.Errorf("%s\nValidate(): -want, +got:\n%s", tc.Reason, diff)
			}
		})
	}
}
