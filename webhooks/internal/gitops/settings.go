package gitops

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

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
