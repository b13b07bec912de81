package clustercache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
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
	// Store, if set, is the Watch's store instead of client-go's indexer:
	// a rule that keeps many objects, or looks them up by more than their
	// key, may bring one that holds them in less memory and keeps its own
	// indexes. It must key objects by "namespace/name" as client-go does,
	// and serve one Watch only.
	Store cache.Indexer
	// Handler, if set, hears of every change to the store, in the Watch's
	// one loop, as each change is stored: it must be quick (index, count,
	// notify), since the next object waits for it.
	Handler cache.ResourceEventHandler
	// Prepare, if set, is called with each listed or watched object in
	// the Watch's loop just before the store keeps it, while nothing else
	// can read it yet: a rule may still change it there (claimguard makes
	// equal strings of objects of different kinds share their bytes,
	// which needs the objects already stored).
	Prepare func(obj any)
	// OnSynced is called once the first list is stored.
	OnSynced func()
	// OnForbidden is called when listing fails because Steward may not
	// list the resource, once each time that starts. Without it the Cache
	// logs it.
	OnForbidden func(error)
	// Namespace, if set, watches that namespace only.
	Namespace string
	// Name, if set, watches the one object of that name (a field selector
	// on metadata.name), which RBAC authorizes by resourceNames: Steward
	// may watch its own objects without the right to watch their kind.
	Name string
}

// Watch is one running informer over one resource at one version.
//
// It is client-go's informer without the shared informer's fan-out: a
// reflector fills a queue, and one loop stores each object and calls the
// Spec's Handler right away. A shared informer gives every handler a
// buffer and two goroutines of its own, to serve handlers that may be
// slow; Steward's handlers only index, and claimguard runs one Watch per
// managed resource kind, hundreds in a cluster with several providers,
// most of them without objects, so that buffer and those goroutines were
// most of what a kind cost. Handlers are therefore called in that loop
// (see Spec.Handler).
type Watch struct {
	gvr        schema.GroupVersionResource
	controller cache.Controller
	indexer    cache.Indexer
	// synced closes once the first list is stored and handled. Read
	// without the queue's lock, which is held while the handler runs.
	synced  <-chan struct{}
	started time.Time
	// forbidden is set when a list or watch fails because Steward may not
	// list the resource, and cleared by a list that succeeds or a watch
	// the API server opens; failing is set when one fails for another
	// reason, and cleared by a list that succeeds or anything a watch
	// brings to the store (see acceptingQueue).
	forbidden atomic.Bool
	failing   atomic.Bool
	cancel    context.CancelFunc
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
	keyFunc := cache.DeletionHandlingMetaNamespaceKeyFunc
	w.indexer = s.Store
	if w.indexer == nil {
		w.indexer = cache.NewIndexer(keyFunc, nil)
	}
	wctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	onForbidden := s.OnForbidden
	if onForbidden == nil {
		onForbidden = func(err error) {
			c.log.Info("Steward may not list a resource a rule caches; lookups find nothing until RBAC grants list and watch", "resource", gvr.String(), "error", err.Error())
		}
	}
	// The list (streamList or listPages) transforms what it lists and
	// stages it in the queue; the queue transforms watch events. The
	// queue hands a list over as one item (AtomicEvents), which the store
	// applies (see sink.replaceAll): queued one item per object, a list
	// would leave an array of one entry per object behind, held by the
	// emptied queue until the next event.
	queue := newQueue(gvr.String(), keyFunc, s.Transform, w.accepted)
	w.synced = queue.Done()
	handler := s.Handler
	if handler == nil {
		handler = cache.ResourceEventHandlerFuncs{}
	}
	sink := &sink{indexer: w.indexer, keyFunc: keyFunc, handler: handler, prepare: s.Prepare}
	w.controller = cache.New(&cache.Config{
		Queue:             queue,
		ListerWatcher:     c.listWatch(gvr, s, w, queue),
		ObjectType:        exampleObject(s),
		ObjectDescription: gvr.String(),
		Process: func(obj any, isInInitialList bool) error {
			deltas, ok := obj.(cache.Deltas)
			if !ok {
				return fmt.Errorf("%s: the queue gave %T, not Deltas", gvr, obj)
			}
			return sink.apply(deltas, isInInitialList)
		},
		WatchErrorHandlerWithContext: func(ctx context.Context, r *cache.Reflector, err error) {
			if apierrors.IsForbidden(err) {
				w.failing.Store(false)
				if !w.forbidden.Swap(true) {
					onForbidden(err)
				}
				return
			}
			w.failing.Store(true)
			cache.DefaultWatchErrorHandler(ctx, r, err)
		},
	})
	go w.controller.RunWithContext(wctx)
	if s.OnSynced != nil {
		go func() {
			select {
			case <-w.synced:
				s.OnSynced()
			case <-wctx.Done():
			}
		}()
	}
	return w
}

// newQueue is a Watch's queue: client-go's RealFIFO handing each list over
// as one ReplacedAll item (see sink), transforming watch events, and
// telling accepted whenever the API server's answer reaches it.
func newQueue(name string, keyFunc cache.KeyFunc, transform cache.TransformFunc, accepted func()) *acceptingQueue {
	return &acceptingQueue{RealFIFO: cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{
		Name:         name,
		KeyFunction:  keyFunc,
		AtomicEvents: true,
	}), transform: transform, accepted: accepted}
}

// acceptingQueue tells its Watch that the API server answered whenever
// anything reaches the queue: a list (Replace), or a watch's object or
// bookmark. A watch's error never does: the reflector hands it to the
// watch error handler instead.
//
// It transforms watch events itself rather than through the RealFIFO's
// transformer, which would also pass every listed object through the
// transform again, into a second array as long as the list: the list
// comes already transformed, staged by the Watch's list function.
type acceptingQueue struct {
	*cache.RealFIFO
	transform cache.TransformFunc
	accepted  func()

	mu     sync.Mutex
	staged []any
}

// stage keeps the objects a list found, transformed, for the Replace that
// follows: the Watch's list function returns the reflector an empty list,
// so that the objects reach the store in this one array, never copied
// into the reflector's.
func (q *acceptingQueue) stage(objs []any) {
	q.mu.Lock()
	q.staged = objs
	q.mu.Unlock()
}

func (q *acceptingQueue) transformed(obj any) (any, error) {
	if q.transform == nil {
		return obj, nil
	}
	return q.transform(obj)
}

func (q *acceptingQueue) Add(obj any) error {
	q.accepted()
	obj, err := q.transformed(obj)
	if err != nil {
		return err
	}
	return q.RealFIFO.Add(obj)
}

func (q *acceptingQueue) Update(obj any) error {
	q.accepted()
	obj, err := q.transformed(obj)
	if err != nil {
		return err
	}
	return q.RealFIFO.Update(obj)
}

func (q *acceptingQueue) Delete(obj any) error {
	q.accepted()
	obj, err := q.transformed(obj)
	if err != nil {
		return err
	}
	return q.RealFIFO.Delete(obj)
}

// Replace hands over the staged list with what the reflector gives (from
// a Watch's list function, nothing).
func (q *acceptingQueue) Replace(list []any, resourceVersion string) error {
	q.accepted()
	q.mu.Lock()
	staged := q.staged
	q.staged = nil
	q.mu.Unlock()
	if len(list) > 0 {
		staged = append(staged, list...)
	}
	return q.RealFIFO.Replace(staged, resourceVersion)
}

func (q *acceptingQueue) Bookmark(resourceVersion string) error {
	q.accepted()
	return q.RealFIFO.Bookmark(resourceVersion)
}

// GVR is the resource and version the informer watches.
func (w *Watch) GVR() schema.GroupVersionResource { return w.gvr }

// Indexer is the informer's store.
func (w *Watch) Indexer() cache.Indexer { return w.indexer }

// HasSynced reports whether the first list has been stored and, when the
// Spec has a Handler, delivered to it (both happen in one step): a rule
// that indexes objects from its handler finds all of them once synced.
func (w *Watch) HasSynced() bool {
	select {
	case <-w.synced:
		return true
	default:
		return false
	}
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

// listWatch lists and watches gvr as metadatainformer or dynamicinformer
// would, and tells w what the API server answers, which is how a Watch
// learns that RBAC was granted again or a failing list recovered. A watch
// the API server opens is allowed (forbidden is cleared), but only what
// it brings to the queue says whether its objects can be served
// (acceptingQueue): a list that cannot convert its objects fails in the
// stream, not when it opens.
//
// The reflector is told it cannot stream lists, so it always lists; the
// list streams where client-go would (streamList), else lists in pages
// (listPages), and stages what it found in queue.
func (c *Cache) listWatch(gvr schema.GroupVersionResource, s Spec, w *Watch, queue *acceptingQueue) cache.ListerWatcher {
	var list func(context.Context, metav1.ListOptions) (runtime.Object, error)
	var watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)
	var client any
	if s.Metadata {
		r := c.meta.Resource(gvr).Namespace(s.Namespace)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, o) }
		watchFn = r.Watch
		client = c.meta
	} else {
		r := c.dyn.Resource(gvr).Namespace(s.Namespace)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, o) }
		watchFn = r.Watch
		client = c.dyn
	}
	if s.Name != "" {
		selector := fields.OneTermEqualSelector("metadata.name", s.Name).String()
		list0, watch0 := list, watchFn
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return list0(ctx, o)
		}
		watchFn = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return watch0(ctx, o)
		}
	}
	stream := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) && !watchlist.DoesClientNotSupportWatchListSemantics(client)
	// read lists, streamed if it can be, else in pages.
	read := func(ctx context.Context, o metav1.ListOptions) (objs []any, rv string, err error) {
		add := func(kept any) { objs = append(objs, kept) }
		if stream {
			if rv, err = streamList(ctx, watchFn, s.Transform, add); err == nil || ctx.Err() != nil {
				return objs, rv, err
			}
			// An API server without WatchList refuses every stream (an
			// invalid request), so that is only worth a debug line; a
			// stream that broke off is worth knowing about.
			log := c.log
			if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
				log = log.V(1)
			}
			log.Info("the API server did not stream the list; listing in pages", "resource", gvr.String(), "error", err.Error())
			objs = nil
		}
		rv, err = listPages(ctx, list, s.Transform, o, add)
		return objs, rv, err
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			defer listing()()
			objs, rv, err := read(ctx, o)
			if err != nil {
				return nil, err
			}
			w.accepted()
			queue.stage(objs)
			return &metainternalversion.List{ListMeta: metav1.ListMeta{ResourceVersion: rv}}, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := watchFn(ctx, o)
			if err != nil {
				return nil, err
			}
			w.forbidden.Store(false)
			return wi, nil
		},
	}
	return cache.ToListWatcherWithWatchListSemantics(lw, cannotStream{})
}

// cannotStream tells the reflector not to stream lists: a Watch's list
// function does (see listWatch).
type cannotStream struct{}

func (cannotStream) IsWatchListSemanticsUnSupported() bool { return true }

// exampleObject is the type the API server sends for s.
func exampleObject(s Spec) runtime.Object {
	if s.Metadata {
		return &metav1.PartialObjectMetadata{}
	}
	return &unstructured.Unstructured{}
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
