package apimigration

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

// SetupWithManager makes a rule whose configuration pins no release follow
// the Flux release installed in the cluster: after every answer of the
// shared cluster cache (which asks again whenever a CRD is added, removed,
// relabelled or changes its served versions) the target is chosen again
// with ClusterTarget, and swapped in while requests are in flight. Steward
// is not ready until the first answer has chosen it. A pinned target is
// only logged.
func (r *Rule) SetupWithManager(mgr manager.Manager, cluster *clustercache.Cache) error {
	r.log = mgr.GetLogger().WithName(Name)
	if r.pinned {
		t := r.Target()
		r.log.Info("target Flux release", "fluxVersion", t.Release.String(), "source", string(t.Source))
		return nil
	}
	f := &follower{rule: r, cluster: cluster, notices: cluster.Subscribe()}
	if err := mgr.Add(f); err != nil {
		return fmt.Errorf("%s: adding the target release follower: %w", Name, err)
	}
	if err := mgr.AddReadyzCheck(Name, r.readyCheck); err != nil {
		return fmt.Errorf("%s: adding the readiness check: %w", Name, err)
	}
	return nil
}

var _ rule.ManagerSetup = (*Rule)(nil)

// readyCheck fails until the target has been chosen from the cluster.
func (r *Rule) readyCheck(*http.Request) error {
	if !r.followed.Load() {
		return errors.New("apimigration: waiting for API discovery to choose the target Flux release")
	}
	return nil
}

// follower chooses the target again after every discovery.
type follower struct {
	rule    *Rule
	cluster *clustercache.Cache
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
				f.rule.follow(ClusterTarget(s))
			}
		}
	}
}

// follow makes t the target, logging when it changes (and the first
// choice).
func (r *Rule) follow(t Target) {
	old := r.target.Load()
	first := !r.followed.Load()
	if *old != t {
		r.target.Store(&t)
	}
	r.followed.Store(true)
	switch {
	case first:
		r.log.Info("target Flux release", "fluxVersion", t.Release.String(), "source", string(t.Source))
	case *old != t:
		r.log.Info("target Flux release changed", "fluxVersion", t.Release.String(), "source", string(t.Source),
			"previousFluxVersion", old.Release.String(), "previousSource", string(old.Source))
	}
}
