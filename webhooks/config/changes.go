package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// ChangedFields lists the fields whose values differ between old and new,
// after defaulting: the top-level settings by name ("exemptUsers") and
// each rule's settings by path ("rules.fleetguard.agentUsers"), in a
// stable order.
func ChangedFields(old, new Config) []string {
	a, b := fieldValues(old), fieldValues(new)
	var out []string
	for path, v := range a {
		if !reflect.DeepEqual(v, b[path]) {
			out = append(out, path)
		}
	}
	for path := range b {
		if _, ok := a[path]; !ok {
			out = append(out, path)
		}
	}
	sort.Strings(out)
	return out
}

// fieldValues flattens a configuration into its fields' JSON values, two
// levels deep under rules.
func fieldValues(c Config) map[string]any {
	out := map[string]any{}
	var top map[string]any
	data, _ := json.Marshal(c) // a Config always marshals
	_ = json.Unmarshal(data, &top)
	for k, v := range top {
		switch k {
		case "apiVersion", "kind":
		case rulesKey:
			sections, _ := v.(map[string]any)
			for name, sec := range sections {
				fields, _ := sec.(map[string]any)
				for f, fv := range fields {
					out[rulesKey+"."+name+"."+f] = fv
				}
			}
		default:
			out[k] = v
		}
	}
	return out
}

// WithField returns base with the one field path (as ChangedFields names
// it) taken from from, so the effect of each change can be told apart;
// rules are the sections the rules section may have.
func WithField(base, from Config, path string, rules Sections) (Config, error) {
	b, f := map[string]any{}, fieldValues(from)
	data, _ := json.Marshal(base)
	_ = json.Unmarshal(data, &b)
	v, ok := f[path]
	if rest, isRule := strings.CutPrefix(path, rulesKey+"."); isRule {
		name, field, found := strings.Cut(rest, ".")
		if !found {
			return Config{}, fmt.Errorf("field %s is not a rule's setting", path)
		}
		rules, _ := b[rulesKey].(map[string]any)
		if rules == nil {
			rules = map[string]any{}
			b[rulesKey] = rules
		}
		s, _ := rules[name].(map[string]any)
		if s == nil {
			s = map[string]any{}
			rules[name] = s
		}
		if ok {
			s[field] = v
		} else {
			delete(s, field)
		}
	} else if ok {
		b[path] = v
	} else {
		delete(b, path)
	}
	data, err := json.Marshal(b)
	if err != nil {
		return Config{}, err
	}
	out, err := Decode(data, rules)
	if err != nil {
		return Config{}, fmt.Errorf("field %s: %w", path, err)
	}
	return out, nil
}
