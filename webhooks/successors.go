package webhooks

import (
	"fmt"

	"github.com/stewardhq/steward/webhooks/config"
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
func Successors(c config.Config, running []Configured) ([]Configured, error) {
	out := make([]Configured, len(running))
	for i, r := range running {
		e := lookup(r.Name)
		if e == nil {
			return nil, fmt.Errorf("rule %q is not in Steward's list", r.Name)
		}
		s := e.settings(c)
		if s.RuleMode() == rule.Off {
			out[i] = Configured{Name: e.Name, Mode: rule.Off}
			continue
		}
		next := e.build(s, c)
		if _, stateful := r.Rule.(clustercache.ManagerSetup); stateful {
			heir, ok := next.(rule.Inheritor)
			if !ok {
				return nil, fmt.Errorf("rule %s holds state from the cluster and cannot take new settings while running", e.Name)
			}
			if err := heir.Inherit(r.Rule); err != nil {
				return nil, fmt.Errorf("rule %s: %w", e.Name, err)
			}
		}
		out[i] = Configured{Name: e.Name, Rule: next, Mode: s.RuleMode()}
	}
	return out, nil
}

func lookup(name string) *entry {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}
