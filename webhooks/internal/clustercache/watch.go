package clustercache

import (
	"context"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// Spec says how to cache one resource.
type Spec struct {
	// Metadata caches metadata only (PartialObjectMetadata); otherwise
	// whole objects (unstructured). Prefer it whenever the rule reads only
	// metadata: the API server then never sends specs or statuses.
	Metadata bool
	// Transform replaces each object before the store keeps it, so only
	// what the rule reads stays in memory. It must accept its own output.
	Transform cache.TransformFunc
	// Indexers are the store's indexes.
	Indexers cache.Indexers
	// Handler, if set, hears of every change to the store.
	Handler cache.ResourceEventHandler
	// OnSynced is called once the first list is stored.
	OnSynced func()
	// OnForbidden is called when listing fails because Steward may not
	// list the resource, once each time that starts. Without it the Cache
	// logs it.
	OnForbidden func(error)
}

// Watch is one running informer over one resource at one version.
type Watch struct {
	gvr       schema.GroupVersionResource
	informer  cache.SharedIndexInformer
	forbidden atomic.Bool
	cancel    context.CancelFunc
	// handled, when the Spec has a Handler, reports whether it has heard
	// of every object of the first list.
	handled func() bool
}

// Watch starts an informer over gvr until ctx ends or Stop is called.
func (c *Cache) Watch(ctx context.Context, gvr schema.GroupVersionResource, s Spec) *Watch {
	var inf cache.SharedIndexInformer
	if s.Metadata {
		inf = metadatainformer.NewFilteredMetadataInformer(c.meta, gvr, "", 0, s.Indexers, nil).Informer()
	} else {
		inf = dynamicinformer.NewFilteredDynamicInformer(c.dyn, gvr, "", 0, s.Indexers, nil).Informer()
	}
	// Both are set before the informer runs, so neither can fail.
	if s.Transform != nil {
		_ = inf.SetTransform(s.Transform)
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &Watch{gvr: gvr, informer: inf, cancel: cancel}
	if s.Handler != nil {
		if reg, err := inf.AddEventHandler(s.Handler); err == nil {
			w.handled = reg.HasSynced
		}
	}
	onForbidden := s.OnForbidden
	if onForbidden == nil {
		onForbidden = func(err error) {
			c.log.Info("Steward may not list a resource a rule caches; lookups find nothing until RBAC grants list and watch", "resource", gvr.String(), "error", err.Error())
		}
	}
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			if !w.forbidden.Swap(true) {
				onForbidden(err)
			}
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	go inf.RunWithContext(wctx)
	go func() {
		if cache.WaitForCacheSync(wctx.Done(), w.HasSynced) {
			w.forbidden.Store(false)
			if s.OnSynced != nil {
				s.OnSynced()
			}
		}
	}()
	return w
}

// GVR is the resource and version the informer watches.
func (w *Watch) GVR() schema.GroupVersionResource { return w.gvr }

// Indexer is the informer's store.
func (w *Watch) Indexer() cache.Indexer { return w.informer.GetIndexer() }

// HasSynced reports whether the first list has been stored and, when the
// Spec has a Handler, delivered to it: a rule that indexes objects from
// its handler finds all of them once synced.
func (w *Watch) HasSynced() bool {
	return w.informer.HasSynced() && (w.handled == nil || w.handled())
}

// Forbidden reports whether the last list failed because Steward may not
// list the resource; it is cleared once a list succeeds.
func (w *Watch) Forbidden() bool { return w.forbidden.Load() }

// Stop ends the informer; its store keeps what it had.
func (w *Watch) Stop() { w.cancel() }

// Get returns a stored object by namespace and name, once synced.
func (w *Watch) Get(namespace, name string) (any, bool) {
	if !w.HasSynced() {
		return nil, false
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, exists, err := w.Indexer().GetByKey(key)
	if err != nil || !exists {
		return nil, false
	}
	return obj, true
}
