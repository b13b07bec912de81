package gitops

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Settings are the settings every GitOps guard's section of the
// configuration file has; a guard's Config embeds them beside its own.
// Their doc comments say what they mean for any tool: each guard's Config
// describes them for its own tool in the configuration's schema
// (Describe), as a field promoted from here has no doc comment of its own.
type Settings struct {
	// Mode is how denials take effect: enforce, warn or audit; or off.
	Mode rule.Mode `json:"mode,omitempty"`
	// AgentUsers are the identities the GitOps tool writes as. Their
	// requests never reach Steward (the webhooks' matchConditions exclude
	// them). Setting the list replaces the defaults. An empty list is kept
	// when the configuration is written out: dropped, it would read back as
	// the defaults.
	AgentUsers []string `json:"agentUsers"`
	// AgentGroups are groups whose members count as the GitOps tool.
	AgentGroups []string `json:"agentGroups"`
	// IgnoredFields are JSON pointers, per group and kind, that may be
	// changed by hand.
	IgnoredFields []IgnoredFields `json:"ignoredFields,omitempty"`
	// UndeclaredFields is what a person's change of fields Git does not
	// declare gets: refuse (the default), or mirror, which allows it where
	// the tool keeps it. Service accounts may always change fields Git does
	// not declare.
	UndeclaredFields Undeclared `json:"undeclaredFields,omitempty"`
}

// DefaultTo fills the unset settings: enforce, and the tool's own
// identities (copies, so that a configuration never shares its lists
// with another's; an empty default stays an empty list, not nil, which
// would read as unset).
func (s *Settings) DefaultTo(agentUsers, agentGroups []string) {
	if s.Mode == "" {
		s.Mode = rule.Enforce
	}
	if s.AgentUsers == nil {
		s.AgentUsers = slices.Clone(agentUsers)
	}
	if s.AgentGroups == nil {
		s.AgentGroups = slices.Clone(agentGroups)
	}
}

// Agent are the identities the tool writes as.
func (s *Settings) Agent() rule.Identities {
	return rule.Identities{Users: s.AgentUsers, Groups: s.AgentGroups}
}

// RuleMode is the configured mode (rule.Settings).
func (s *Settings) RuleMode() rule.Mode { return s.Mode }

// ValidateAgent reports an invalid mode or identity: the first errors of
// every guard's Validate. The guards report the rest in orders of their
// own, kept since they were written, so each composes its list from these
// and ValidateUndeclared and ValidateIgnored.
func (s *Settings) ValidateAgent(p *field.Path) field.ErrorList {
	errs := s.Mode.Validate(p.Child("mode"))
	errs = append(errs, ValidateNames(p.Child("agentUsers"), s.AgentUsers, "a user name")...)
	return append(errs, ValidateNames(p.Child("agentGroups"), s.AgentGroups, "a group name")...)
}

// ValidateUndeclared reports an undeclaredFields setting Steward does not
// know.
func (s *Settings) ValidateUndeclared(p *field.Path) field.ErrorList {
	return s.UndeclaredFields.Validate(p.Child("undeclaredFields"))
}

// ValidateIgnored reports every invalid entry of ignoredFields.
func (s *Settings) ValidateIgnored(p *field.Path) field.ErrorList {
	return ValidateIgnored(p.Child("ignoredFields"), s.IgnoredFields)
}

// Describe sets the configuration schema's descriptions of a guard's
// settings, by json name, in the schema of its Config (a
// rule.SchemaRefiner's): the guard's own words for the Settings it
// embeds, which name its tool.
func Describe(schema map[string]any, docs map[string]string) {
	props := schema["properties"].(map[string]any)
	for name, doc := range docs {
		props[name].(map[string]any)["description"] = doc
	}
}

// ValidateName reports a name that is set but not of the form valid says
// (a validation.Is* function), what naming the form.
func ValidateName(p *field.Path, name string, valid func(string) []string, what string) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		return nil
	}
	for _, msg := range valid(name) {
		errs = append(errs, field.Invalid(p, name, what+": "+msg))
	}
	return errs
}

// IgnoredFields lists the paths of one kind that changes may touch: every
// guard's ignoredFields setting.
type IgnoredFields struct {
	// Group is the API group, "" for the core group.
	Group string `json:"group"`
	// Kind is the object kind, e.g. Deployment.
	Kind string `json:"kind"`
	// Paths are RFC 6901 JSON pointers; a pointer also covers everything
	// below it.
	Paths []string `json:"paths"`
}

var _ rule.SchemaRefiner = IgnoredFields{}

// RefineSchema makes the configuration's schema refuse an entry without
// a kind or without paths, as ValidateIgnored does.
func (IgnoredFields) RefineSchema(s map[string]any) {
	props := s["properties"].(map[string]any)
	props["kind"].(map[string]any)["minLength"] = 1
	props["paths"].(map[string]any)["minItems"] = 1
	s["required"] = []string{"kind", "paths"}
}

// ValidateIgnored reports every invalid entry of an ignoredFields setting
// by its field path.
func ValidateIgnored(p *field.Path, list []IgnoredFields) field.ErrorList {
	var errs field.ErrorList
	for i, f := range list {
		fp := p.Index(i)
		if f.Kind == "" {
			errs = append(errs, field.Required(fp.Child("kind"), "the kind the paths belong to, e.g. Deployment"))
		}
		if len(f.Paths) == 0 {
			errs = append(errs, field.Required(fp.Child("paths"), "at least one JSON pointer, e.g. /spec/replicas"))
		}
		for j, s := range f.Paths {
			pp := fp.Child("paths").Index(j)
			ptr, err := object.ParsePointer(s)
			switch {
			case err != nil:
				errs = append(errs, field.Invalid(pp, s, "not an RFC 6901 JSON pointer: "+err.Error()))
			case len(ptr) == 0:
				errs = append(errs, field.Invalid(pp, s, "the empty pointer is the whole object and would ignore every change"))
			}
		}
	}
	return errs
}

// ValidateNames reports empty user or group names of a list setting.
func ValidateNames(p *field.Path, names []string, what string) field.ErrorList {
	var errs field.ErrorList
	for i, n := range names {
		if n == "" {
			errs = append(errs, field.Required(p.Index(i), what))
		}
	}
	return errs
}

// Validate reports an undeclaredFields setting that is neither refuse nor
// mirror; empty is the default, refuse.
func (u Undeclared) Validate(p *field.Path) field.ErrorList {
	switch u {
	case "", UndeclaredRefuse, UndeclaredMirror:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, u, []Undeclared{UndeclaredRefuse, UndeclaredMirror})}
}
