package rule

import "k8s.io/apimachinery/pkg/util/validation/field"

// Settings is a rule's section of Steward's configuration file, under
// rules.<rule name>. A rule's Config implements it with pointer receivers.
type Settings interface {
	// Default fills unset settings.
	Default()
	// Validate reports invalid settings by field path.
	Validate(path *field.Path) field.ErrorList
	// RuleMode is how the rule's denials take effect.
	RuleMode() Mode
}
