// Package fluxguard refuses hand edits to objects Flux applies, as
// fleetguard does for Fleet: a kubectl edit of a Git-managed object lives
// until the next reconcile (or, for a HelmRelease without drift
// detection, until the next upgrade), and Flux's status keeps reporting
// Ready meanwhile. It is the GitOps engine (webhooks/internal/gitops)
// with Flux's resolver: the labels name a Kustomization or HelmRelease,
// whose own record in the cache must list the object.
package fluxguard

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Name is the rule's name: its config key, metric label and log field.
const Name = "fluxguard"

// Rule is the fluxguard admission handler.
type Rule struct {
	guard    *gitops.Guard
	resolver *resolver
}

var _ rule.Rule = (*Rule)(nil)

// New builds the rule from its configuration and the global break-glass
// group, which denial messages name. It touches no cluster: until
// SetupWithManager (or WithOwners) gives it the owners' cache, every
// owner is "not found".
func New(c Config, breakGlassGroup string) *Rule {
	c.Default()
	r := &Rule{resolver: newResolver(c)}
	r.guard = gitops.New(gitops.Options{
		// The agent is named in the singular, as the engine's sentences
		// expect: "written by a Flux controller", "which only a Flux
		// controller sets".
		Rule: Name, Tool: "Flux", AgentName: "a Flux controller", Applier: "Flux",
		Settings: c.Settings, Agent: c.Agent(), BreakGlassGroup: breakGlassGroup,
		OptOut:  gitops.OptOut{Paths: optOutPaths, Groups: c.OptOutGroups},
		Records: records, Markers: markers,
	}, r.resolver)
	return r
}

// Handle decides one admission request as if the rule were enforced.
func (r *Rule) Handle(ctx context.Context, req *rule.Request) admission.Response {
	return r.guard.Handle(ctx, req)
}

// WithOwners sets where owners are looked up; tests and offline use pass
// their own.
func (r *Rule) WithOwners(l gitops.OwnerCache) *Rule {
	r.resolver.Cache = l
	return r
}

// Inherit makes r read owners from the cache running was set up with;
// everything else is r's own settings.
func (r *Rule) Inherit(running rule.Rule) error {
	return gitops.Inherit(Name, running, func(old *Rule) { r.resolver.Caches = old.resolver.Caches })
}

var _ rule.Inheritor = (*Rule)(nil)
