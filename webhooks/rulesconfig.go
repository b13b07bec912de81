package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	"github.com/stewardhq/steward/webhooks/rule"
)

// rulesKey is where RulesConfig sits in the configuration file.
const rulesKey = "rules"

// RulesConfig holds each rule's settings, keyed by the rule's name: the
// rules section of the configuration file. Each value is the rule's own
// Config (a pointer to it); the list decides which keys exist.
type RulesConfig map[string]rule.Settings

// Default fills every rule's unset settings, adding the sections the file
// left out.
func (c *RulesConfig) Default() {
	if *c == nil {
		*c = RulesConfig{}
	}
	for _, e := range list {
		s := (*c)[e.name]
		if s == nil {
			s = e.newSettings()
			(*c)[e.name] = s
		}
		s.Default()
	}
}

// Validate checks every rule's settings, in the list's order.
func (c RulesConfig) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, e := range list {
		if s := c[e.name]; s != nil {
			errs = append(errs, s.Validate(path.Child(e.name))...)
		}
	}
	return errs
}

// SettingsOf returns the settings of the rule whose Config is C.
func SettingsOf[C any](c RulesConfig) C {
	for _, s := range c {
		if v, ok := any(s).(*C); ok {
			return *v
		}
	}
	var zero C
	return zero
}

// UnmarshalJSON decodes each rule's section into the rule's Config,
// case-sensitively, and reports a section of the wrong type as the field
// it is. Unknown and duplicate keys are left to strictRulesErrors, so
// ParseConfig reports them with the rest of the file's.
func (c *RulesConfig) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	sections, err := rulesSections(data)
	if err != nil {
		return err
	}
	out := RulesConfig{}
	for _, sec := range sections {
		e := lookup(sec.name)
		if e == nil {
			continue
		}
		s := e.newSettings()
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(sec.raw, s); err != nil {
			return sectionError(sec.name, err)
		}
		out[sec.name] = s
	}
	*c = out
	return nil
}

// strictRulesErrors are the unknown and duplicate keys of the rules
// section of the configuration document js, named by their full path as
// the rest of the file's are.
func strictRulesErrors(js []byte) []error {
	var file struct {
		Rules json.RawMessage `json:"rules"`
	}
	if err := json.Unmarshal(js, &file); err != nil || len(file.Rules) == 0 {
		return nil // decoding the file reports it
	}
	sections, err := rulesSections(file.Rules)
	if err != nil {
		return nil
	}
	var errs []error
	for _, sec := range sections {
		path := rulesKey + "." + sec.name
		e := lookup(sec.name)
		if e == nil {
			errs = append(errs, fmt.Errorf("unknown field %q", path))
			continue
		}
		strict, err := sigsjson.UnmarshalStrict(sec.raw, e.newSettings())
		if err != nil {
			continue // decoding the file reports it
		}
		for _, s := range strict {
			var fe sigsjson.FieldError
			if errors.As(s, &fe) {
				fe.SetFieldPath(path + "." + fe.FieldPath())
			}
			errs = append(errs, s)
		}
	}
	return errs
}

func lookup(name string) *entry {
	for i := range list {
		if list[i].name == name {
			return &list[i]
		}
	}
	return nil
}

// section is one key of the rules section, in the file's order.
type section struct {
	name string
	raw  json.RawMessage
}

// rulesSections splits the rules section into its keys, in order; it
// reports anything but an object as a RulesConfig of the wrong type.
func rulesSections(data []byte) ([]section, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, &json.UnmarshalTypeError{Value: jsonKind(data), Type: reflect.TypeFor[RulesConfig](), Offset: dec.InputOffset()}
	}
	var out []section
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, section{name: tok.(string), raw: raw})
	}
	return out, nil
}

// jsonKind names the kind of a JSON value as encoding/json's errors do.
func jsonKind(data []byte) string {
	switch b := bytes.TrimSpace(data); {
	case len(b) == 0:
		return "value"
	case b[0] == '"':
		return "string"
	case b[0] == '[':
		return "array"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	default:
		return "number"
	}
}

// sectionError names a type error in a rule's section by its path from
// the top of the file, as decoding the whole file names it, and keeps the
// file's decoder from renaming it.
func sectionError(name string, err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	fixed := *te
	if fixed.Field == "" {
		fixed.Struct, fixed.Field = "RulesConfig", rulesKey+"."+name
	} else {
		fixed.Field = rulesKey + "." + name + "." + fixed.Field
	}
	return errors.New(fixed.Error())
}
