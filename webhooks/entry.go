package webhooks

import (
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/rule"
)

// entry is one rule of the list: its name and section of the
// configuration, and how to build it from them.
type entry struct {
	config.RuleSection
	build func(s rule.Settings, c config.Config) rule.Rule
}

// newEntry lists the rule named name, built by build from its Config C
// (whose pointer is its rule.Settings) and Steward's configuration.
func newEntry[C any, PC interface {
	*C
	rule.Settings
}, R rule.Rule](name string, build func(C, config.Config) R) entry {
	return entry{
		RuleSection: config.RuleSection{Name: name, NewSettings: func() rule.Settings { return PC(new(C)) }},
		build:       func(s rule.Settings, c config.Config) rule.Rule { return build(*s.(PC), c) },
	}
}

// settings are the rule's settings in c, defaulted when c has none.
func (e entry) settings(c config.Config) rule.Settings {
	s := c.Rules[e.Name]
	if s == nil {
		s = e.NewSettings()
		s.Default()
	}
	return s
}

// alone adapts a constructor that needs only the rule's own settings.
func alone[C, R any](build func(C) R) func(C, config.Config) R {
	return func(s C, _ config.Config) R { return build(s) }
}

// withBreakGlassGroup adapts a constructor that also takes the break-glass
// group, which the rule's denial messages name.
func withBreakGlassGroup[C, R any](build func(C, string) R) func(C, config.Config) R {
	return func(s C, c config.Config) R { return build(s, c.BreakGlassGroup) }
}
