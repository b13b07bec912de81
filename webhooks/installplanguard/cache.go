package installplanguard

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

var (
	installPlans  = schema.GroupResource{Group: group, Resource: "installplans"}
	subscriptions = schema.GroupResource{Group: group, Resource: "subscriptions"}
)

// SetupWithManager caches InstallPlan phases, used to tell whether a
// Subscription's plan is installing, and Subscriptions' plan references
// and conditions, which the audit reads. Whole objects, because what the
// rule reads is in the status, slimmed by keepPhase and keepPlanStatus
// before they are kept. Each cache starts once its CRD is served, at the
// version the server prefers (following OLM upgrades), and gates
// readiness only if it was served at start-up, so Steward is ready at
// once on clusters without OLM.
func (r *Rule) SetupWithManager(mgr manager.Manager, cluster *clustercache.Cache) error {
	set := cluster.Follow(Name, map[schema.GroupResource]clustercache.Spec{
		installPlans:  {Transform: keepPhase},
		subscriptions: {Transform: keepPlanStatus},
	})
	r.plans = phases{set}
	return mgr.AddReadyzCheck(Name+"-installplans", set.Ready)
}

// phases looks plan phases up in the cache.
type phases struct{ set *clustercache.Set }

func (p phases) Phase(namespace, name string) (string, bool) {
	obj, ok := p.set.Get(installPlans, namespace, name)
	if !ok {
		return "", false
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return "", false
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return phase, true
}

// plan returns what the audit reads of a cached plan.
func (p phases) plan(namespace, name string) (planState, bool) {
	obj, ok := p.set.Get(installPlans, namespace, name)
	if !ok {
		return planState{}, false
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return planState{}, false
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return planState{phase: phase, created: u.GetCreationTimestamp().Time}, true
}

// keepPhase keeps only what identifies a plan, when it was created, and
// its phase. An InstallPlan carries every manifest of the operator it
// installs in status.plan; the cache needs a few bytes of it. It is
// idempotent, as informers require.
func keepPhase(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	slim := identityOf(u)
	slim.SetCreationTimestamp(u.GetCreationTimestamp())
	if phase, found, _ := unstructured.NestedString(u.Object, "status", "phase"); found {
		_ = unstructured.SetNestedField(slim.Object, phase, "status", "phase")
	}
	return slim, nil
}

// Inherit makes r look plans up in the cache running was set up with;
// everything else is r's own settings.
func (r *Rule) Inherit(running rule.Rule) error {
	old, ok := running.(*Rule)
	if !ok {
		return fmt.Errorf("installplanguard cannot take over from a %T", running)
	}
	r.plans = old.plans
	return nil
}

// Collector reports the informers over the InstallPlans as
// steward_watched_kinds{rule="installplanguard",...}; the server
// registers it with the registry it serves. A rule that was never set up
// reports nothing; an heir keeps the running rule's cache, which the
// collector registered at start-up goes on reading.
func (r *Rule) Collector() prometheus.Collector {
	var set *clustercache.Set
	if c, ok := r.plans.(phases); ok {
		set = c.set
	}
	return set.Collector()
}

var _ rule.MetricsCollector = (*Rule)(nil)

// identityOf is a new object with u's type, namespace, name, UID and
// resource version, and nothing else: what every cached object keeps.
func identityOf(u *unstructured.Unstructured) *unstructured.Unstructured {
	slim := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(),
		"kind":       u.GetKind(),
	}}
	slim.SetNamespace(u.GetNamespace())
	slim.SetName(u.GetName())
	slim.SetUID(u.GetUID())
	slim.SetResourceVersion(u.GetResourceVersion())
	return slim
}
