package rule

import (
	"encoding/json"
	"fmt"
	"slices"

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
	// Off leaves the rule out entirely: no webhook entry, route, cache or
	// RBAC. Manifests must be rendered with the same configuration
	// (`steward manifests --config`), or the API server keeps calling a
	// path Steward no longer serves.
	Off Mode = "off"
)

// Modes are every Mode, in the order they are documented.
func Modes() []Mode { return []Mode{Enforce, Warn, Audit, Off} }

// Validate reports a Mode that is not one of Modes.
func (m Mode) Validate(path *field.Path) field.ErrorList {
	if slices.Contains(Modes(), m) {
		return nil
	}
	var names []string
	for _, mode := range Modes() {
		names = append(names, string(mode))
	}
	return field.ErrorList{field.NotSupported(path, m, names)}
}

// UnmarshalJSON reads a mode. YAML 1.1, which the configuration file is
// read as, turns an unquoted off into false; that is taken as Off, so
// `mode: off` means what it says. Other non-strings are refused.
func (m *Mode) UnmarshalJSON(data []byte) error {
	if string(data) == "false" {
		*m = Off
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("a mode is one of enforce, warn, audit or off, not %s", data)
	}
	*m = Mode(s)
	return nil
}
