package installplanguard

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks/internal/servedcache"
)

var installPlans = schema.GroupResource{Group: group, Resource: "installplans"}

// SetupWithManager starts an informer cache of InstallPlan phases, used to
// tell whether a Subscription's plan is installing. The cache starts once
// the InstallPlan CRD is served, and gates readiness only if it was served
// at start-up, so Steward is ready at once on clusters without OLM.
func (r *Rule) SetupWithManager(mgr manager.Manager) error {
	dyn, err := dynamic.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("%s: dynamic client: %w", Name, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("%s: discovery client: %w", Name, err)
	}
	newInformer := func(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
		inf := dynamicinformer.NewFilteredDynamicInformer(dyn, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
		// Set before the informer runs, so it cannot fail.
		_ = inf.SetTransform(keepPhase)
		return inf
	}
	set := servedcache.New(Name, []schema.GroupResource{installPlans}, servedcache.PreferredResources(dc), newInformer, 0, mgr.GetLogger().WithName(Name))
	r.plans = phases{set}
	return set.AddToManager(mgr, Name+"-installplans")
}

// phases looks plan phases up in the cache.
type phases struct{ set *servedcache.Set }

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

// keepPhase keeps only what identifies a plan and its phase. An InstallPlan
// carries every manifest of the operator it installs in status.plan; the
// cache needs a few bytes of it. It is idempotent, as informers require.
func keepPhase(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	slim := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(),
		"kind":       u.GetKind(),
	}}
	slim.SetNamespace(u.GetNamespace())
	slim.SetName(u.GetName())
	slim.SetUID(u.GetUID())
	slim.SetResourceVersion(u.GetResourceVersion())
	if phase, found, _ := unstructured.NestedString(u.Object, "status", "phase"); found {
		_ = unstructured.SetNestedField(slim.Object, phase, "status", "phase")
	}
	return slim, nil
}
