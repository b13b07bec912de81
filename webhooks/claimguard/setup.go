package claimguard

import (
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// rulesSyncInterval is how often the webhook rules are re-checked without
// an XRD or CRD change.
const rulesSyncInterval = 30 * time.Second

// SetupWithManager adds claimguard's caches (every replica), its webhook
// rules syncer (the leader, when leader election is on) and its readiness
// check to the manager. Nothing talks to the cluster until the manager
// starts.
func (r *Rule) SetupWithManager(mgr manager.Manager) error {
	cfg := mgr.GetConfig()
	r.log = mgr.GetLogger().WithName(Name)
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("claimguard: discovery client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("claimguard: dynamic client: %w", err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("claimguard: metadata client: %w", err)
	}
	d := &discoverer{rule: r, log: r.log.WithName("discovery"), disco: disco, dyn: dyn, meta: meta, kick: make(chan struct{}, 1)}
	if err := mgr.Add(d); err != nil {
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
