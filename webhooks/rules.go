// Package webhooks holds the one list of Steward's rules, and how a
// configuration selects and builds them: the server serves the rules
// Rules builds, `steward manifests` renders their webhook configurations,
// and the configuration file (webhooks/config) has a section for each.
package webhooks

import (
	"github.com/stewardhq/steward/webhooks/apimigration"
	"github.com/stewardhq/steward/webhooks/argocdguard"
	"github.com/stewardhq/steward/webhooks/claimguard"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/fleetguard"
	"github.com/stewardhq/steward/webhooks/fluxguard"
	"github.com/stewardhq/steward/webhooks/installplanguard"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/suspendnotice"
)

// list is every Steward rule, in the order it is served and rendered: its
// name (its configuration key, metric label and log field) and its
// constructor, whose first argument is the rule's Config (a rule.Settings).
// Adding a rule is its package and one line here.
var list = []entry{
	newEntry(apimigration.Name, alone(apimigration.New)),
	newEntry(argocdguard.Name, withBreakGlassGroup(argocdguard.New)),
	newEntry(claimguard.Name, alone(claimguard.New)),
	newEntry(fleetguard.Name, withBreakGlassGroup(fleetguard.New)),
	newEntry(fluxguard.Name, withBreakGlassGroup(fluxguard.New)),
	newEntry(installplanguard.Name, alone(installplanguard.New)),
	newEntry(suspendnotice.Name, alone(suspendnotice.New)),
}

// Sections are the configuration file's rules' sections, one for each
// rule of the list, in its order, each decoded into the rule's own Config:
// what every reader of a configuration (config.Parse, config.Load,
// config.Defaults, config.Schema) is handed.
func Sections() config.Sections {
	out := make(config.Sections, len(list))
	for i, e := range list {
		out[i] = e.RuleSection
	}
	return out
}

// Configured is a rule together with the mode its configuration chose.
type Configured struct {
	// Name is the rule's name, its key in the rules section.
	Name string
	Rule rule.Rule
	Mode rule.Mode
}

// Rules returns every Steward rule its configuration does not turn off,
// built from that configuration.
func Rules(c config.Config) []Configured {
	out := make([]Configured, 0, len(list))
	for _, e := range list {
		s := e.settings(c)
		if s.RuleMode() == rule.Off {
			continue
		}
		out = append(out, Configured{Name: e.Name, Rule: e.build(s, c), Mode: s.RuleMode()})
	}
	return out
}
