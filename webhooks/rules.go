// Package webhooks holds the one list of Steward's rules and their
// configuration. The server registers handlers from it and `steward
// manifests` renders the webhook configurations from it.
package webhooks

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/apimigration"
	"github.com/stewardhq/steward/webhooks/claimguard"
	"github.com/stewardhq/steward/webhooks/fleetguard"
	"github.com/stewardhq/steward/webhooks/installplanguard"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/suspendnotice"
)

// RulesConfig holds each rule's settings, keyed by the rule's name.
// Adding a rule adds one field here and one line in Rules.
type RulesConfig struct {
	APIMigration     apimigration.Config     `json:"apimigration"`
	Claimguard       claimguard.Config       `json:"claimguard"`
	Fleetguard       fleetguard.Config       `json:"fleetguard"`
	InstallPlanGuard installplanguard.Config `json:"installplanguard"`
	SuspendNotice    suspendnotice.Config    `json:"suspendnotice"`
}

// Default fills every rule's unset settings.
func (c *RulesConfig) Default() {
	c.APIMigration.Default()
	c.Claimguard.Default()
	c.Fleetguard.Default()
	c.InstallPlanGuard.Default()
	c.SuspendNotice.Default()
}

// Validate checks every rule's settings.
func (c *RulesConfig) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, c.APIMigration.Validate(path.Child(apimigration.Name))...)
	errs = append(errs, c.Claimguard.Validate(path.Child(claimguard.Name))...)
	errs = append(errs, c.Fleetguard.Validate(path.Child(fleetguard.Name))...)
	errs = append(errs, c.InstallPlanGuard.Validate(path.Child(installplanguard.Name))...)
	errs = append(errs, c.SuspendNotice.Validate(path.Child(suspendnotice.Name))...)
	return errs
}

// Configured is a rule together with the mode its configuration chose.
type Configured struct {
	Rule rule.Rule
	Mode rule.Mode
}

// Rules returns every Steward rule, built from its configuration.
func Rules(c Config) []Configured {
	return []Configured{
		{Rule: apimigration.New(c.Rules.APIMigration), Mode: c.Rules.APIMigration.Mode},
		{Rule: claimguard.New(c.Rules.Claimguard), Mode: c.Rules.Claimguard.Mode},
		{Rule: fleetguard.New(c.Rules.Fleetguard, c.BreakGlassGroup), Mode: c.Rules.Fleetguard.Mode},
		{Rule: installplanguard.New(c.Rules.InstallPlanGuard), Mode: c.Rules.InstallPlanGuard.Mode},
		{Rule: suspendnotice.New(c.Rules.SuspendNotice), Mode: c.Rules.SuspendNotice.Mode},
	}
}
