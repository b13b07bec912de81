package apimigration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/go-logr/logr"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
)

// SetupWithManager makes the rule follow the Flux release installed in the
// cluster: after every answer of the shared cluster cache (which asks
// again whenever a CRD is added, removed, relabelled or changes its served
// versions) the release is chosen again with ClusterTarget, and swapped in
// while requests are in flight. A rule whose configuration pins a release
// decides against that one, but the loop runs all the same, so a reloaded
// configuration that drops the pin finds the cluster's release at hand.
// Steward is not ready until the first answer has chosen it, unless the
// rule in use pins the target.
func (r *Rule) SetupWithManager(mgr manager.Manager, cluster *clustercache.Cache) error {
	r.view.log = mgr.GetLogger().WithName(Name)
	r.view.discovered = cluster.Served
	if r.pin != nil {
		r.view.log.Info("target Flux release", "fluxVersion", r.pin.Release.String(), "source", string(r.pin.Source))
	}
	f := &follower{view: r.view, cluster: cluster, api: mgr.GetAPIReader(), notices: cluster.Subscribe()}
	if err := mgr.Add(f); err != nil {
		return fmt.Errorf("%s: adding the target release follower: %w", Name, err)
	}
	if err := mgr.AddReadyzCheck(Name, r.view.readyCheck); err != nil {
		return fmt.Errorf("%s: adding the readiness check: %w", Name, err)
	}
	return nil
}

var _ clustercache.ManagerSetup = (*Rule)(nil)

// view is what the rule knows of the cluster, shared by the rule set up at
// start-up and every rule that inherits from it.
type view struct {
	// cluster is the release installed in the cluster, replaced as a whole
	// while requests are in flight: Handle loads it once.
	cluster atomic.Pointer[Target]
	// followed is set once the release was chosen from the cluster.
	followed atomic.Bool
	// inUse is the rule being served, whose target the metric reports and
	// the log follows.
	inUse atomic.Pointer[Rule]
	log   logr.Logger
	// cluster is the cluster cache's latest discovery answer, which the
	// audit reads the served Flux kinds from; nil until SetupWithManager.
	discovered func() *clustercache.Served
}

func newView() *view {
	v := &view{log: logr.Discard()}
	t := defaultTarget
	v.cluster.Store(&t)
	return v
}

// readyCheck fails until the release has been chosen from the cluster,
// unless the rule in use pins it.
func (v *view) readyCheck(*http.Request) error {
	if v.inUse.Load().pin == nil && !v.followed.Load() {
		return errors.New("apimigration: waiting for API discovery to choose the target Flux release")
	}
	return nil
}

// follow makes t the cluster's release, logging when the target of the
// rule in use changes (and its first choice from the cluster).
func (v *view) follow(t Target) {
	before := v.inUse.Load().Target()
	first := !v.followed.Load()
	v.cluster.Store(&t)
	v.followed.Store(true)
	after := v.inUse.Load().Target()
	switch {
	case first && v.inUse.Load().pin == nil:
		v.log.Info("target Flux release", "fluxVersion", after.Name(), "source", string(after.Source))
	case before != after:
		v.log.Info("target Flux release changed", "fluxVersion", after.Name(), "source", string(after.Source),
			"previousFluxVersion", before.Name(), "previousSource", string(before.Source))
	}
}

// follow and readyCheck on the rule are the view's, for tests.
func (r *Rule) follow(t Target)                    { r.view.follow(t) }
func (r *Rule) readyCheck(req *http.Request) error { return r.view.readyCheck(req) }

// follower chooses the target again after every discovery.
type follower struct {
	view    *view
	cluster *clustercache.Cache
	// api reads the Flux CRDs by name when their label does not name the
	// release (the GETs the audit makes too).
	api     client.Reader
	notices <-chan struct{}
}

// NeedLeaderElection is false: every replica answers requests.
func (f *follower) NeedLeaderElection() bool { return false }

// Start follows the cluster until ctx ends.
func (f *follower) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-f.notices:
			if s := f.cluster.Served(); s != nil {
				f.view.follow(f.target(ctx, s))
			}
		}
	}
}

// target chooses the release from discovery's answer s and, when no CRD's
// label names it, from the Flux CRDs themselves: up to one GET per Flux
// kind installed, after each discovery (a CRD changed, or the periodic
// one). A CRD that cannot be read leaves the choice to the versions served.
func (f *follower) target(ctx context.Context, s *clustercache.Served) Target {
	if hasLabel(s) {
		return ClusterTarget(s, nil)
	}
	crds, err := readShapes(ctx, f.api, s)
	if err != nil {
		f.view.log.Error(err, "reading the Flux CRDs; choosing the target Flux release from the versions they serve")
	}
	return ClusterTarget(s, crds)
}
