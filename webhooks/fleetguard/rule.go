// Package fleetguard refuses manual changes to objects deployed by Fleet.
// A hand edit or delete of a GitOps-managed object silently diverges from
// Git until Fleet reverts it, and Fleet's status keeps reporting the bundle
// as ready meanwhile; fleetguard refuses the write instead and says where
// to make the change.
package fleetguard

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Rule is the fleetguard admission handler: the GitOps guards' engine
// with Fleet's resolver, which reads Scale requests' workloads from a
// metadata cache.
type Rule struct {
	guard *gitops.Guard
	agent gitops.Identities
	// parents reads workloads' metadata for scale requests; it is the
	// manager's cache once SetupWithManager ran.
	parents client.Reader
	// lookupTimeout bounds a cache read on the request path.
	lookupTimeout time.Duration
}

var (
	_ rule.Rule                 = (*Rule)(nil)
	_ clustercache.ManagerSetup = (*Rule)(nil)
	_ rule.Inheritor            = (*Rule)(nil)
	_ rule.CacheScope           = (*Rule)(nil)
)

// New builds the rule from its configuration and the global break-glass
// group, which denial messages name. It touches no cluster. Pointers that
// do not parse are skipped; Validate reports them before New is called.
func New(c Config, breakGlassGroup string) *Rule {
	c.Default()
	agent := gitops.Identities{Users: c.AgentUsers, Groups: c.AgentGroups}
	r := &Rule{agent: agent, lookupTimeout: time.Second}
	r.guard = gitops.New(gitops.Options{
		Rule: Name, Tool: "Fleet", AgentName: "the Fleet agent",
		Agent: agent, Ignored: c.IgnoredFields, BreakGlassGroup: breakGlassGroup,
	}, resolver{r})
	return r
}

// Handle decides one admission request as if the rule were enforced.
func (r *Rule) Handle(ctx context.Context, req *rule.Request) admission.Response {
	return r.guard.Handle(ctx, req)
}

const appliedWithOwnerReason = "object set has an owner (" + AnnotationOwnerGVK + "): applied by a controller, not deployed from a Fleet bundle"
