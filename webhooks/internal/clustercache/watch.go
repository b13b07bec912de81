package clustercache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
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
	gvr      schema.GroupVersionResource
	informer cache.SharedIndexInformer
	started  time.Time
	// forbidden is set when a list or watch fails because Steward may not
	// list the resource, and cleared by a list that succeeds or a watch
	// the API server opens; failing is set when one fails for another
	// reason, and cleared by a list that succeeds or a watch event that
	// is not an error (see informer).
	forbidden atomic.Bool
	failing   atomic.Bool
	cancel    context.CancelFunc
	// handled, when the Spec has a Handler, reports whether it has heard
	// of every object of the first list.
	handled func() bool
}

// State is what a Watch can answer, in the words of the
// steward_watched_kinds metric.
type State string

const (
	// StateSynced: the informer has stored its first list, and no list
	// or watch has failed since the last one that came through.
	StateSynced State = "synced"
	// StateSyncing: the first list is not stored yet, or the last list or
	// watch failed for a reason other than RBAC (the informer retries; a
	// synced store keeps answering meanwhile, possibly stale).
	StateSyncing State = "syncing"
	// StateForbidden: the last list or watch failed because Steward may
	// not list or watch the resource.
	StateForbidden State = "forbidden"
)

// Watch starts an informer over gvr until ctx ends or Stop is called.
func (c *Cache) Watch(ctx context.Context, gvr schema.GroupVersionResource, s Spec) *Watch {
	w := &Watch{gvr: gvr, started: time.Now()}
	inf := c.informer(gvr, s, w)
	w.informer = inf
	// Both are set before the informer runs, so neither can fail. The
	// list (pagedList) transforms what it lists; the store transforms
	// watch events.
	_ = inf.SetTransform(withTransformed(s.Transform))
	wctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
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
			w.failing.Store(false)
			if !w.forbidden.Swap(true) {
				onForbidden(err)
			}
			return
		}
		w.failing.Store(true)
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	go inf.RunWithContext(wctx)
	go func() {
		if cache.WaitForCacheSync(wctx.Done(), w.HasSynced) {
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

// Forbidden reports whether the last list or watch failed because Steward
// may not list the resource; it is cleared once one is accepted.
func (w *Watch) Forbidden() bool { return w.forbidden.Load() }

// State is the informer's state now: forbidden, synced or syncing.
func (w *Watch) State() State {
	switch {
	case w.forbidden.Load():
		return StateForbidden
	case w.HasSynced() && !w.failing.Load():
		return StateSynced
	}
	return StateSyncing
}

// accepted clears the failure flags: the API server answered a list, or a
// watch sent an object or a bookmark.
func (w *Watch) accepted() {
	if w.forbidden.Load() {
		w.forbidden.Store(false)
	}
	if w.failing.Load() {
		w.failing.Store(false)
	}
}

// informer builds the informer metadatainformer or dynamicinformer would,
// over a ListWatch that tells w what the API server answers, which is how
// a Watch learns that RBAC was granted again or a failing list recovered.
// A watch the API server opens is allowed (forbidden is cleared), but only
// its events say whether its objects can be served: client-go lists
// through a watch (WatchListClient), and a list that cannot convert its
// objects fails in the stream, not when it opens.
func (c *Cache) informer(gvr schema.GroupVersionResource, s Spec, w *Watch) cache.SharedIndexInformer {
	var list func(context.Context, metav1.ListOptions) (runtime.Object, error)
	var watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)
	var client any
	var example runtime.Object
	if s.Metadata {
		r := c.meta.Resource(gvr)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, o) }
		watchFn = r.Watch
		client, example = c.meta, &metav1.PartialObjectMetadata{}
	} else {
		r := c.dyn.Resource(gvr)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, o) }
		watchFn = r.Watch
		client, example = c.dyn, &unstructured.Unstructured{}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := pagedList(ctx, list, s.Transform, o)
			if err == nil {
				w.accepted()
			}
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := watchFn(ctx, o)
			if err != nil {
				return nil, err
			}
			w.forbidden.Store(false)
			return observe(wi, w.accepted), nil
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), example,
		cache.SharedIndexInformerOptions{Indexers: s.Indexers, ObjectDescription: gvr.String()})
}

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

// observedWatch passes a watch's events on, calling ok for every one that
// is not an error. Unlike watch.Filter it never blocks once stopped, so no
// goroutine outlives a watch the reflector stopped while an event was on
// its way.
type observedWatch struct {
	inner  watch.Interface
	result chan watch.Event
	done   chan struct{}
	once   sync.Once
}

func observe(inner watch.Interface, ok func()) watch.Interface {
	o := &observedWatch{inner: inner, result: make(chan watch.Event), done: make(chan struct{})}
	go func() {
		defer close(o.result)
		for e := range inner.ResultChan() {
			if e.Type != watch.Error {
				ok()
			}
			select {
			case o.result <- e:
			case <-o.done:
				return
			}
		}
	}()
	return o
}

func (o *observedWatch) ResultChan() <-chan watch.Event { return o.result }

func (o *observedWatch) Stop() {
	o.once.Do(func() { close(o.done) })
	o.inner.Stop()
}
