package claimguard

import (
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
)

// SetupWithManager adds claimguard's caches (every replica, in the shared
// cluster cache) and its readiness check to the manager. Nothing talks to
// the cluster until the manager starts. The rules of its create and delete
// entries are kept by the server's rulessync.Syncer, from the Spec's
// DynamicRules.
func (r *Rule) SetupWithManager(mgr manager.Manager, cluster *clustercache.Cache) error {
	r.log = mgr.GetLogger().WithName(Name)
	if err := mgr.Add(newDiscoverer(r, cluster)); err != nil {
		return fmt.Errorf("claimguard: adding the discovery loop: %w", err)
	}
	if err := mgr.AddReadyzCheck(Name, r.readyCheck); err != nil {
		return fmt.Errorf("claimguard: adding the readiness check: %w", err)
	}
	return nil
}

// readyCheck fails until the first discovery ran and its caches synced.
func (r *Rule) readyCheck(*http.Request) error {
	if !r.found.ready.Load() {
		return fmt.Errorf("claimguard caches have not synced")
	}
	return nil
}
