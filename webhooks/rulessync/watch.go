package rulessync

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
)

var (
	validatingGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	mutatingGVR   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// watches are the Syncer's informers: each over one object, by name, so
// at rest they cost a watch connection and nothing else, and RBAC grants
// them by resourceNames.
type watches struct {
	configs map[string]*clustercache.Watch // by kind
	// deployment tells an uninstall (Keep only).
	deployment     *clustercache.Watch
	deploymentSeen atomic.Bool
}

// watch starts the watches; every change kicks a sync.
func (s *Syncer) watch(ctx context.Context) {
	kick := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.trigger() },
		UpdateFunc: func(any, any) { s.trigger() },
		DeleteFunc: func(any) { s.trigger() },
	}
	w := &watches{configs: map[string]*clustercache.Watch{}}
	names := map[string]map[string]bool{"ValidatingWebhookConfiguration": {}, "MutatingWebhookConfiguration": {}}
	if s.keep != nil {
		for _, c := range s.keep.configs {
			names[c.kind][c.name] = true
		}
	}
	for _, t := range s.targets {
		names[t.typ.ConfigurationKind()][t.configuration] = true
	}
	for kind, set := range names {
		gvr := validatingGVR
		if kind == "MutatingWebhookConfiguration" {
			gvr = mutatingGVR
		}
		for name := range set {
			w.configs[kind+"/"+name] = s.opts.Cache.Watch(ctx, gvr, clustercache.Spec{Name: name, Handler: kick})
		}
	}
	if s.keep != nil {
		reg := s.keep.reg
		if reg.Deployment != "" && reg.Target.Namespace != "" {
			seen := cache.ResourceEventHandlerFuncs{
				AddFunc:    func(any) { w.deploymentSeen.Store(true); s.trigger() },
				UpdateFunc: func(any, any) { s.trigger() },
				DeleteFunc: func(any) { s.trigger() },
			}
			w.deployment = s.opts.Cache.Watch(ctx, deploymentGVR, clustercache.Spec{Metadata: true, Namespace: reg.Target.Namespace, Name: reg.Deployment, Handler: seen})
		}
		s.keep.uninstalling = w.uninstalling(reg)
	}
	s.watches = w
}

// live returns a configuration as the watch holds it; ok is false while
// the watch cannot tell (not synced, or Steward may not watch it).
func (w *watches) live(kind, name string) (obj map[string]any, ok bool) {
	watch := w.configs[kind+"/"+name]
	if watch == nil || !watch.HasSynced() || watch.Forbidden() {
		return nil, false
	}
	got, exists := watch.Get("", name)
	if !exists {
		return nil, true
	}
	u, isU := got.(*unstructured.Unstructured)
	if !isU {
		return nil, false
	}
	return u.Object, true
}

// uninstalling reports whether Steward is being uninstalled: its
// Deployment, once seen, is being deleted or is gone. helm uninstall and kubectl delete -k delete the Deployment in
// the same pass as the webhook configurations (deleting the namespace
// deletes it too).
func (w *watches) uninstalling(reg Registration) func() (bool, string) {
	gone := func(watch *clustercache.Watch, name, namespace string) (bool, bool) {
		if watch == nil || !watch.HasSynced() {
			return false, false
		}
		obj, exists := watch.Get(namespace, name)
		if !exists {
			return true, true
		}
		m, ok := obj.(*metav1.PartialObjectMetadata)
		return ok && m.DeletionTimestamp != nil, exists
	}
	return func() (bool, string) {
		if deleting, _ := gone(w.deployment, reg.Deployment, reg.Target.Namespace); deleting && w.deploymentSeen.Load() {
			return true, "Deployment " + reg.Target.Namespace + "/" + reg.Deployment + " is being deleted"
		}
		return false, ""
	}
}
