package webhooks

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Successors builds the rules a reloaded configuration c puts in place of
// running, the rules being served: out[i] replaces running[i]. Each is
// built from c and, when it holds state from the cluster, takes over the
// running rule's (rule.Inheritor), so its caches and loops carry on and
// only what its settings decide changes. out[i].Rule is nil, with Mode
// Off, when c turns the rule off. Rules c turns on that are not running
// are not built: their routes and caches exist only from start-up.
func Successors(c Config, running []Configured) ([]Configured, error) {
	out := make([]Configured, len(running))
	for i, r := range running {
		e := lookup(r.Name)
		if e == nil {
			return nil, fmt.Errorf("rule %q is not in Steward's list", r.Name)
		}
		s := c.Rules[e.name]
		if s == nil {
			s = e.newSettings()
			s.Default()
		}
		if s.RuleMode() == rule.Off {
			out[i] = Configured{Name: e.name, Mode: rule.Off}
			continue
		}
		next := e.build(s, c)
		if _, stateful := r.Rule.(clustercache.ManagerSetup); stateful {
			heir, ok := next.(rule.Inheritor)
			if !ok {
				return nil, fmt.Errorf("rule %s holds state from the cluster and cannot take new settings while running", e.name)
			}
			if err := heir.Inherit(r.Rule); err != nil {
				return nil, fmt.Errorf("rule %s: %w", e.name, err)
			}
		}
		out[i] = Configured{Name: e.name, Rule: next, Mode: s.RuleMode()}
	}
	return out, nil
}

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
// it) taken from from, so the effect of each change can be told apart.
func WithField(base, from Config, path string) (Config, error) {
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
	var out Config
	if err := json.Unmarshal(data, &out); err != nil {
		return Config{}, fmt.Errorf("field %s: %w", path, err)
	}
	out.Default()
	return out, nil
}
