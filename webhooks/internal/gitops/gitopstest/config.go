package gitopstest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CheckDefault fails t, naming reason, unless a guard's Config in, once
// defaulted, is want.
func CheckDefault[C any, P interface {
	*C
	Default()
}](t *testing.T, reason string, in, want C) {
	t.Helper()
	got := in
	P(&got).Default()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s\nDefault(): -want, +got:\n%s", reason, diff)
	}
}

// CheckValidate fails t, naming reason, unless a guard's Config in,
// validated at p, reports want.
func CheckValidate[C any, P interface {
	*C
	Validate(*field.Path) field.ErrorList
}](t *testing.T, reason string, p *field.Path, in C, want field.ErrorList) {
	t.Helper()
	if diff := cmp.Diff(want, P(&in).Validate(p)); diff != "" {
		t.Errorf("%s\nValidate(): -want, +got:\n%s", reason, diff)
	}
}
