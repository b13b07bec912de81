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

// SchemaRefiner is a type in a rule's settings whose valid values are
// narrower than its Go type says. The configuration's JSON schema reflects
// the type by its json tags and hands the result to RefineSchema, which
// adds what the Go type cannot say (a pattern, a minimum length, required
// members), beside the Validate it mirrors. Implement it with a value
// receiver.
type SchemaRefiner interface {
	RefineSchema(schema map[string]any)
}
