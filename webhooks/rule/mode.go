package rule

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Mode is how a rule's denials take effect.
type Mode string

const (
	// Enforce denies the request.
	Enforce Mode = "enforce"
	// Warn allows the request and returns the denial as a warning.
	Warn Mode = "warn"
	// Audit allows the request silently; only the audit annotation, the log
	// line and the metric record what would have been denied.
	Audit Mode = "audit"
)

// Validate reports a Mode that is not one of the three known ones.
func (m Mode) Validate(path *field.Path) field.ErrorList {
	switch m {
	case Enforce, Warn, Audit:
		return nil
	}
	return field.ErrorList{field.NotSupported(path, m, []string{string(Enforce), string(Warn), string(Audit)})}
}
