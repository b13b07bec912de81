package claimguard

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// SetupWithManager adds claimguard's caches and its readiness check to the
// manager. Nothing talks to the cluster until the manager starts. The
// rules of its create and delete entries are kept by the server's
// rule.RulesSyncer, from the Spec's DynamicRules.
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
