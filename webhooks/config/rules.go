package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	"github.com/stewardhq/steward/webhooks/rule"
)

// rulesKey is where RulesConfig sits in the configuration file.
const rulesKey = "rules"

// RuleSection is how the rules section holds one rule's settings.
type RuleSection struct {
	// Name is the rule's name, its key in the rules section.
	Name string
	// NewSettings returns an empty value of the rule's own settings (a
	// pointer to its Config) to decode the rule's section into.
	NewSettings func() rule.Settings
}

// Sections are the rules' sections of the configuration file, in the rule
// list's order: the order they are defaulted, validated and described in.
// The rule list (package webhooks), which alone knows which rules exist,
// hands them to every function that reads or describes a file
// (webhooks.Sections()).
type Sections []RuleSection

// errNoSections is reading a configuration with no rules' sections to
// decode its rules section into.
var errNoSections = errors.New("no rules' sections to read the rules section with: the rule list hands them over (webhooks.Sections())")

// names are the names of every rule, in the list's order.
func (s Sections) names() []string {
	out := make([]string, 0, len(s))
	for _, r := range s {
		out = append(out, r.Name)
	}
	return out
}

func (s Sections) lookup(name string) *RuleSection {
	for i := range s {
		if s[i].Name == name {
			return &s[i]
		}
	}
	return nil
}

// RulesConfig holds each rule's settings, keyed by the rule's name: the
// rules section of the configuration file. Each value is the rule's own
// Config (a pointer to it); the list decides which keys exist.
type RulesConfig map[string]rule.Settings

// Default fills every rule's unset settings, adding the sections the file
// left out.
func (c *RulesConfig) Default(rules Sections) {
	if *c == nil {
		*c = RulesConfig{}
	}
	for _, sec := range rules {
		s := (*c)[sec.Name]
		if s == nil {
			s = sec.NewSettings()
			(*c)[sec.Name] = s
		}
		s.Default()
	}
}

// Validate checks every rule's settings, in the list's order.
func (c RulesConfig) Validate(path *field.Path, rules Sections) field.ErrorList {
	var errs field.ErrorList
	for _, sec := range rules {
		if s := c[sec.Name]; s != nil {
			errs = append(errs, s.Validate(path.Child(sec.Name))...)
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

// rulesReader decodes the rules section into Into with the sections it
// was handed: the rules section of the file as Parse decodes it.
type rulesReader struct {
	Into  *RulesConfig
	Rules Sections
}

// UnmarshalJSON decodes each rule's section into the rule's Config,
// case-sensitively, and reports a section of the wrong type as the field
// it is. Unknown and duplicate keys are left to strictRulesErrors, so
// Parse reports them with the rest of the file's.
func (r rulesReader) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	sections, err := rulesSections(data)
	if err != nil {
		return err
	}
	out := RulesConfig{}
	for _, sec := range sections {
		rs := r.Rules.lookup(sec.name)
		if rs == nil {
			continue
		}
		s := rs.NewSettings()
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(sec.raw, s); err != nil {
			return sectionError(sec.name, reflect.TypeOf(s), err)
		}
		out[sec.name] = s
	}
	*r.Into = out
	return nil
}

// strictRulesErrors are the unknown and duplicate keys of the rules
// section of the configuration document js, named by their full path as
// the rest of the file's are.
func strictRulesErrors(js []byte, rules Sections) []error {
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
		rs := rules.lookup(sec.name)
		if rs == nil {
			errs = append(errs, fmt.Errorf("unknown field %q", path))
			continue
		}
		strict, err := sigsjson.UnmarshalStrict(sec.raw, rs.NewSettings())
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

// sectionText is one key of the rules section as the file writes it, in
// the file's order.
type sectionText struct {
	name string
	raw  json.RawMessage
}

// rulesSections splits the rules section into its keys, in order; it
// reports anything but an object as a RulesConfig of the wrong type.
func rulesSections(data []byte) ([]sectionText, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, &json.UnmarshalTypeError{Value: jsonKind(data), Type: reflect.TypeFor[RulesConfig](), Offset: dec.InputOffset()}
	}
	var out []sectionText
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, sectionText{name: tok.(string), raw: raw})
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

// sectionError names a type error in a rule's section, whose settings
// are of type t, by its path from the top of the file, as decoding the
// whole file names it, and keeps the file's decoder from renaming it.
func sectionError(name string, t reflect.Type, err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	fixed := *te
	if fixed.Field == "" {
		fixed.Struct, fixed.Field = "RulesConfig", rulesKey+"."+name
	} else {
		fixed.Field = rulesKey + "." + name + "." + fileNames(t, fixed.Field)
	}
	return errors.New(fixed.Error())
}

// fileNames is a field path of the settings type t as the file writes
// it. encoding/json names a field of an embedded struct after the struct
// too ("Settings.agentUsers"), which the file never writes: the GitOps
// guards' Configs embed the settings they share.
func fileNames(t reflect.Type, path string) string {
	var out []string
	for _, name := range strings.Split(path, ".") {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			t = nil
			out = append(out, name)
			continue
		}
		if f, ok := t.FieldByName(name); ok && f.Anonymous && f.Tag.Get("json") == "" {
			t = f.Type
			continue
		}
		t = fieldType(t, name)
		out = append(out, name)
	}
	return strings.Join(out, ".")
}

// fieldType is the type of t's field that the file names name (its json
// name), nil when there is none.
func fieldType(t reflect.Type, name string) reflect.Type {
	for _, f := range reflect.VisibleFields(t) {
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name || (tag == "" && f.Name == name) {
			return f.Type
		}
	}
	return nil
}
