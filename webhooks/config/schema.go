package config

import (
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/rule"
)

// durationPattern is what time.ParseDuration reads, less a sign: every
// duration of the configuration must be positive (or 0 where 0 means
// off).
const durationPattern = `^\+?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

// Schema is the JSON schema (draft-07) of the configuration file,
// reflected from the types Parse decodes it into, by their json tags:
// Config and each rule's section, in the list's order. Like the strict
// decoding it refuses unknown keys (every object has
// additionalProperties: false) and values of the wrong type, modes and
// recordEventsFor values Steward does not know, and a file without
// Steward's apiVersion and kind; a type of a rule's settings narrows its
// own schema (rule.SchemaRefiner). It accepts null wherever the decoding
// does (null leaves a setting to its default). What Validate checks
// beyond that (durations' bounds, names' form, duplicates) it leaves to
// Steward, which refuses it at start-up naming the field. The Helm chart
// embeds it under config in values.schema.json. Each type and field is
// described by its Go doc comment (schemaDocs).
func Schema(rules Sections) map[string]any {
	r := schemaReflector{descriptions: schemaDocs, rules: rules}
	return r.schema(reflect.TypeFor[Config]())
}

// schemaReflector reflects the schema; descriptions are the doc comments
// of types and fields, by "package/path.Type" and "package/path.Type.Field"
// (the path less Steward's module), and
// every key looked up is added to looked, when it is not nil.
type schemaReflector struct {
	// rules are the sections the rules section describes.
	rules        Sections
	descriptions map[string]string
	looked       map[string]bool
}

func (r schemaReflector) description(key string) string {
	if r.looked != nil {
		r.looked[key] = true
	}
	return r.descriptions[key]
}

// module is the Go module Steward's packages are in.
const module = "github.com/stewardhq/steward"

// typeName names t as descriptions do: its package's path, less the
// module's when it is Steward's, and its own name.
func typeName(t reflect.Type) string {
	return strings.TrimPrefix(t.PkgPath(), module+"/") + "." + t.Name()
}

func (r schemaReflector) schema(t reflect.Type) map[string]any {
	s := r.reflect(t)
	if t.Name() != "" && t.PkgPath() != "" {
		if d := r.description(typeName(t)); d != "" {
			s["description"] = d
		}
	}
	return s
}

func (r schemaReflector) reflect(t reflect.Type) map[string]any {
	switch t {
	case reflect.TypeFor[Config]():
		s := r.object(t)
		props := s["properties"].(map[string]any)
		props["apiVersion"] = map[string]any{"const": APIVersion, "description": "The format of the file: " + APIVersion + "."}
		props["kind"] = map[string]any{"const": Kind, "description": "The kind of the file: " + Kind + "."}
		s["required"] = []string{"apiVersion", "kind"}
		return s
	case reflect.TypeFor[RulesConfig]():
		props := map[string]any{}
		for _, sec := range r.rules {
			props[sec.Name] = nullable(r.schema(reflect.TypeOf(sec.NewSettings()).Elem()))
		}
		return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	case reflect.TypeFor[rule.Mode]():
		// YAML reads an unquoted off as false, which Steward takes as
		// off; empty is unset, the default.
		values := []any{}
		for _, m := range rule.Modes() {
			values = append(values, string(m))
		}
		return map[string]any{"enum": append(values, false, "")}
	case reflect.TypeFor[EventsFor]():
		values := []any{}
		for _, v := range EventsForValues() {
			values = append(values, string(v))
		}
		return map[string]any{"enum": append(values, "")}
	case reflect.TypeFor[Duration]():
		return map[string]any{"anyOf": []any{
			map[string]any{"type": "string", "pattern": durationPattern},
			map[string]any{"const": 0},
		}}
	case reflect.TypeFor[metav1.Duration]():
		return map[string]any{"type": "string", "pattern": durationPattern}
	case reflect.TypeFor[AuditConfig]():
		s := r.object(t)
		rules := s["properties"].(map[string]any)["disabledRules"].(map[string]any)
		names := []any{}
		for _, n := range r.rules.names() {
			names = append(names, n)
		}
		rules["items"] = map[string]any{"enum": names}
		rules["uniqueItems"] = true
		return s
	}
	if t.Kind() == reflect.Pointer {
		return r.schema(t.Elem())
	}
	s := r.ofKind(t)
	if t.Implements(reflect.TypeFor[rule.SchemaRefiner]()) {
		reflect.Zero(t).Interface().(rule.SchemaRefiner).RefineSchema(s)
	}
	return s
}

// ofKind is the schema of a value of t's kind, its members reflected in
// turn.
func (r schemaReflector) ofKind(t reflect.Type) map[string]any {
	switch t.Kind() {
	case reflect.Struct:
		return r.object(t)
	case reflect.Slice:
		return map[string]any{"type": "array", "items": r.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": r.schema(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	}
	panic(fmt.Sprintf("the configuration schema has no schema for %s", t))
}

// object is a struct's schema: its fields by their json names, nothing
// else.
func (r schemaReflector) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	r.fields(t, props)
	return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
}

func (r schemaReflector) fields(t reflect.Type, props map[string]any) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case tag == "-" || !f.IsExported():
			continue
		case f.Anonymous && name == "":
			// Embedded (metav1.TypeMeta, inline): its fields are the
			// struct's.
			r.fields(f.Type, props)
			continue
		case name == "":
			name = f.Name
		}
		s := nullable(r.schema(f.Type))
		if d := r.description(typeName(t) + "." + f.Name); d != "" {
			s["description"] = d
		}
		props[name] = s
	}
}

// nullable lets s be null too, as decoding a null leaves a setting unset.
func nullable(s map[string]any) map[string]any {
	switch {
	case s["enum"] != nil:
		s["enum"] = append(s["enum"].([]any), nil)
	case s["anyOf"] != nil:
		s["anyOf"] = append(s["anyOf"].([]any), map[string]any{"type": "null"})
	case s["type"] != nil:
		s["type"] = []any{s["type"], "null"}
	}
	return s
}
