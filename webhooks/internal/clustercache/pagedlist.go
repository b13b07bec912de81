package clustercache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// PageSize is how many objects one list request asks the API server for.
// It bounds what a list holds before the informer's transform has made
// each object small: one page of whole objects on top of the slim ones
// already kept.
const PageSize = 500

// Why informers list in pages of slim objects.
//
// An informer's first list, when it is not streamed (WatchList: API
// servers of Kubernetes 1.31 and older do not stream, and a client run
// with KUBE_FEATURE_WatchListClient=false does not ask), is read whole
// into memory and only then handed to the store, whose transform trims
// each object. Until then every object is held as the API
// server sent it, managed fields, specs and statuses included: at 39,000
// cached objects Steward's start-up peak was three times what it kept once
// synced, and a large enough cluster would put it over its memory limit
// before it was ever ready. And client-go's own paging does not help: it
// lists with resourceVersion "0", which the API server's watch cache
// answers whole, ignoring the page size.
//
// So the list an informer calls asks for pages of PageSize at the latest
// resource version (resourceVersion "", the read the reflector itself
// falls back to when the one it asked for is gone), and applies the
// informer's transform to each page's objects before it asks for the next;
// a Watch stages the transformed objects in its queue (see listWatch);
// for the manager's informers, what the list hands the reflector holds
// only transformed objects, wrapped so that the store's transform passes
// them through instead of transforming them twice. Where the API server
// streams, a Watch streams its list instead (streamList), and the
// manager's informers do not call the list at all: their stream's objects
// are transformed one by one as they arrive.

// listsInFlight counts the lists Steward's informers are reading now,
// process-wide (see ListsInFlight).
var listsInFlight atomic.Int64

// listing counts a list in flight until the function it returns is called.
func listing() (done func()) {
	listsInFlight.Add(1)
	return func() { listsInFlight.Add(-1) }
}

// ListsInFlight is how many lists the informers of every Cache and of the
// manager's cache (NewPagedInformer) are reading now. Steward collects
// harder while it fills its caches; readiness alone does not say they are
// filled, since claimguard stops holding it back for a kind after a
// minute.
func ListsInFlight() int64 { return listsInFlight.Load() }

// transformed is an object a paged list already passed through the
// informer's transform. The reflector needs runtime.Objects; the store's
// transform (withTransformed) unwraps it.
type transformed struct{ obj any }

func (t *transformed) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// GetObjectMeta lets client-go key the wrapper as the object it wraps:
// some of its queues key an object before they transform it.
func (t *transformed) GetObjectMeta() metav1.Object {
	m, err := meta.Accessor(t.obj)
	if err != nil {
		return nil
	}
	return m
}

// DeepCopyObject returns the same wrapper: nothing modifies it, and stores
// hold the unwrapped object.
func (t *transformed) DeepCopyObject() runtime.Object { return t }

// withTransformed is the store's transform for an informer whose list is
// pagedList: objects the list transformed are unwrapped, all others (watch
// events) go through transform, which may be nil.
func withTransformed(transform cache.TransformFunc) cache.TransformFunc {
	return func(obj any) (any, error) {
		if t, ok := obj.(*transformed); ok {
			return t.obj, nil
		}
		if transform == nil {
			return obj, nil
		}
		return transform(obj)
	}
}

// pagedList lists through list in pages of PageSize at the latest
// resource version, whatever version or limit opts ask for, and returns
// the objects of every page passed through transform (nil: kept as they
// are) and wrapped for withTransformed, with the resource version of the
// list. A page whose continue token has expired fails the whole list; the
// reflector then lists again from the start.
func pagedList(ctx context.Context, list func(context.Context, metav1.ListOptions) (runtime.Object, error), transform cache.TransformFunc, opts metav1.ListOptions) (runtime.Object, error) {
	defer listing()()
	out := &metainternalversion.List{}
	rv, err := listPages(ctx, list, transform, opts, func(kept any) {
		out.Items = append(out.Items, &transformed{obj: kept})
	})
	if err != nil {
		return nil, err
	}
	out.ResourceVersion = rv
	return out, nil
}

// listPages lists as pagedList does, handing each object to add once
// transformed, and returns the list's resource version.
func listPages(ctx context.Context, list func(context.Context, metav1.ListOptions) (runtime.Object, error), transform cache.TransformFunc, opts metav1.ListOptions, add func(kept any)) (string, error) {
	opts.ResourceVersion, opts.ResourceVersionMatch, opts.Continue = "", "", ""
	opts.Limit = PageSize
	for {
		page, err := list(ctx, opts)
		if err != nil {
			return "", err
		}
		m, err := meta.ListAccessor(page)
		if err != nil {
			return "", fmt.Errorf("reading a list page: %w", err)
		}
		// A copy of each item, so that an object the transform keeps as
		// it is does not keep its whole page alive.
		err = meta.EachListItemWithAlloc(page, func(obj runtime.Object) error {
			var kept any = obj
			if transform != nil {
				if kept, err = transform(obj); err != nil {
					return err
				}
			}
			add(kept)
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("transforming a list page: %w", err)
		}
		if m.GetContinue() == "" {
			return m.GetResourceVersion(), nil
		}
		opts.Continue = m.GetContinue()
	}
}

// NewPagedInformer is a SharedIndexInformer constructor for the
// controller-runtime cache (cache.Options.NewInformer): the informer it
// builds lists as pagedList does, with the transform the cache then sets
// (SetTransform, before the informer runs), so the manager's informers
// also never hold a whole list of untransformed objects.
func NewPagedInformer(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	p := &pagedInformer{}
	inner := cache.ToListerWatcherWithContext(lw)
	paged := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return pagedList(ctx, inner.ListWithContext, p.transform(), o)
		},
		WatchFuncWithContext: inner.WatchWithContext,
	}
	p.SharedIndexInformer = cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(paged, lw), example, resync, indexers)
	// The store unwraps what the list transformed even when no transform
	// is set; the informer has not run, so this cannot fail.
	_ = p.SharedIndexInformer.SetTransform(withTransformed(nil))
	return p
}

// pagedInformer remembers the transform it is given for its list.
type pagedInformer struct {
	cache.SharedIndexInformer
	mu sync.Mutex
	t  cache.TransformFunc
}

func (p *pagedInformer) SetTransform(t cache.TransformFunc) error {
	if err := p.SharedIndexInformer.SetTransform(withTransformed(t)); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t = t
	return nil
}

func (p *pagedInformer) transform() cache.TransformFunc {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.t
}
