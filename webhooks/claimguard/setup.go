package claimguard

import (
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
)

// rulesSyncInterval is how often the webhook rules are re-checked without
// an XRD or CRD change.
const rulesSyncInterval = 30 * time.Second

// SetupWithManager adds claimguard's caches (every replica, in the shared
// cluster cache), its webhook rules syncer (the leader, when leader
// election is on) and its readiness check to the manager. Nothing talks to
// the cluster until the manager starts.
func (r *Rule) SetupWithManager(mgr manager.Manager, cluster *clustercache.Cache) error {
	cfg := mgr.GetConfig()
	r.log = mgr.GetLogger().WithName(Name)
	if err := mgr.Add(newDiscoverer(r, cluster)); err != nil {
		return fmt.Errorf("claimguard: adding the discovery loop: %w", err)
	}
	if r.cfg.manageRules() {
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("claimguard: kubernetes client: %w", err)
		}
		s := &rulesSyncer{rule: r, log: r.log.WithName("webhook-rules"), kube: kube, interval: rulesSyncInterval}
		if err := mgr.Add(s); err != nil {
			return fmt.Errorf("claimguard: adding the webhook rules syncer: %w", err)
		}
	}
	if err := mgr.AddReadyzCheck(Name, r.readyCheck); err != nil {
		return fmt.Errorf("claimguard: adding the readiness check: %w", err)
	}
	return nil
}

// readyCheck fails until the first discovery ran and its caches synced.
func (r *Rule) readyCheck(*http.Request) error {
	if !r.ready.Load() {
		return fmt.Errorf("claimguard caches have not synced")
	}
	return nil
}
