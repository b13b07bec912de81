package webhooks

import "github.com/stewardhq/steward/webhooks/rule"

// entry is one rule of the list: its name, a fresh section of settings to
// decode its configuration into, and how to build it from them.
type entry struct {
	name        string
	newSettings func() rule.Settings
	build       func(s rule.Settings, c Config) rule.Rule
}

// newEntry lists the rule named name, built by build from its Config C
// (whose pointer is its rule.Settings) and Steward's configuration.
func newEntry[C any, PC interface {
	*C
	rule.Settings
}, R rule.Rule](name string, build func(C, Config) R) entry {
	return entry{
		name:        name,
		newSettings: func() rule.Settings { return PC(new(C)) },
		build:       func(s rule.Settings, c Config) rule.Rule { return build(*s.(PC), c) },
	}
}

// alone adapts a constructor that needs only the rule's own settings.
func alone[C, R any](build func(C) R) func(C, Config) R {
	return func(s C, _ Config) R { return build(s) }
}

// withBreakGlassGroup adapts a constructor that also takes the break-glass
// group, which the rule's denial messages name.
func withBreakGlassGroup[C, R any](build func(C, string) R) func(C, Config) R {
	return func(s C, c Config) R { return build(s, c.BreakGlassGroup) }
}
