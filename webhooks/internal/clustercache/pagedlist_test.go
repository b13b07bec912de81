package clustercache

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// pagedServer answers lists in pages of whatever limit is asked, as the
// API server does, and records what each request asked and how many
// objects the transform had seen when it came.
type pagedServer struct {
	total int

	mu          sync.Mutex
	requests    []metav1.ListOptions
	transformed int
	seenAtPage  []int
}

func (p *pagedServer) list(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, o)
	p.seenAtPage = append(p.seenAtPage, p.transformed)
	from := 0
	if o.Continue != "" {
		from, _ = strconv.Atoi(o.Continue)
	}
	to := p.total
	if o.Limit > 0 {
		to = min(from+int(o.Limit), p.total)
	}
	out := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
	if to < p.total {
		out.Continue = strconv.Itoa(to)
	}
	for i := from; i < to; i++ {
		out.Items = append(out.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("o%d", i), ResourceVersion: "42",
			Annotations: map[string]string{"big": "not kept"},
		}})
	}
	return out, nil
}

// trim keeps an object's name and resource version.
func (p *pagedServer) trim(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return nil, fmt.Errorf("unexpected %T", obj)
	}
	if m.Annotations == nil {
		return m, nil // already trimmed
	}
	p.mu.Lock()
	p.transformed++
	p.mu.Unlock()
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: m.Name, ResourceVersion: m.ResourceVersion}}, nil
}

func TestPagedListTransformsEachPageBeforeAskingForTheNext(t *testing.T) {
	srv := &pagedServer{total: 2*PageSize + 7}
	got, err := pagedList(context.Background(), srv.list, srv.trim, metav1.ListOptions{ResourceVersion: "0", Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if len(srv.requests) != 3 {
		t.Fatalf("%d requests, want 3 pages of %d", len(srv.requests), PageSize)
	}
	for i, o := range srv.requests {
		if o.Limit != PageSize || o.ResourceVersion != "" || o.ResourceVersionMatch != "" {
			t.Errorf("request %d asked %+v; want limit %d at the latest resource version", i, o, PageSize)
		}
		if want := i * PageSize; srv.seenAtPage[i] != want {
			t.Errorf("page %d was asked for when %d objects were transformed, want %d", i, srv.seenAtPage[i], want)
		}
	}
	if srv.requests[0].Continue != "" || srv.requests[1].Continue != strconv.Itoa(PageSize) {
		t.Errorf("continue tokens %q, %q: want none, then the first page's", srv.requests[0].Continue, srv.requests[1].Continue)
	}
	items, err := meta.ExtractList(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != srv.total {
		t.Fatalf("%d objects listed, want %d", len(items), srv.total)
	}
	for _, it := range items {
		w, ok := it.(*transformed)
		if !ok {
			t.Fatalf("listed %T, want the transformed wrapper", it)
		}
		if m := w.obj.(*metav1.PartialObjectMetadata); m.Annotations != nil {
			t.Fatalf("%s kept its annotations: not transformed", m.Name)
		}
		// Some of client-go's queues key an object before transforming it.
		if key, err := cache.MetaNamespaceKeyFunc(w); err != nil || key != w.obj.(*metav1.PartialObjectMetadata).Name {
			t.Fatalf("the wrapper's key is %q (%v), want the object's", key, err)
		}
	}
	if rv := got.(*metainternalversion.List).ResourceVersion; rv != "42" {
		t.Errorf("list resource version %q, want the last page's 42", rv)
	}
}

func TestPagedListFailsWithAPageThatFails(t *testing.T) {
	calls := 0
	_, err := pagedList(context.Background(), func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		calls++
		if calls == 2 {
			return nil, fmt.Errorf("continue token expired")
		}
		return &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{Continue: "next"}}, nil
	}, nil, metav1.ListOptions{})
	if err == nil {
		t.Fatal("a list whose second page failed succeeded")
	}
}

// TestPagedInformerStoresTransformedObjects runs the manager cache's
// informer over a server that does not stream: the transform the cache
// sets after building it applies to every listed object, and the store
// holds the objects themselves, not the list's wrappers.
func TestPagedInformerStoresTransformedObjects(t *testing.T) {
	srv := &pagedServer{total: PageSize + 3}
	lw := &cache.ListWatch{
		ListWithContextFunc: srv.list,
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	inf := NewPagedInformer(cache.ToListWatcherWithWatchListSemantics(lw, noWatchList{}), &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	if err := inf.SetTransform(srv.trim); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	if len(srv.requests) != 2 {
		t.Errorf("%d list requests, want 2 pages", len(srv.requests))
	}
	items := inf.GetStore().List()
	if len(items) != srv.total {
		t.Fatalf("%d objects stored, want %d", len(items), srv.total)
	}
	for _, it := range items {
		m, ok := it.(*metav1.PartialObjectMetadata)
		if !ok {
			t.Fatalf("stored %T, want *PartialObjectMetadata", it)
		}
		if m.Annotations != nil {
			t.Fatalf("%s stored with its annotations: not transformed", m.Name)
		}
	}
}

// noWatchList is a client that cannot stream lists, as against an API
// server without WatchList.
type noWatchList struct{}

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// TestListsInFlightCountsAListUntilItReturns: Steward collects harder
// while lists are in flight, so a list must count while it reads its pages
// and stop counting once it returns, failed or not.
func TestListsInFlightCountsAListUntilItReturns(t *testing.T) {
	before := ListsInFlight()
	var during int64
	for _, fail := range []bool{false, true} {
		_, err := pagedList(context.Background(), func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			during = ListsInFlight()
			if fail {
				return nil, fmt.Errorf("the API server is gone")
			}
			return &metav1.PartialObjectMetadataList{}, nil
		}, nil, metav1.ListOptions{})
		if (err != nil) != fail {
			t.Fatalf("pagedList = %v", err)
		}
		if during != before+1 {
			t.Errorf("%d lists in flight while listing, want %d", during, before+1)
		}
		if after := ListsInFlight(); after != before {
			t.Errorf("%d lists in flight once the list returned (failed: %v), want %d", after, fail, before)
		}
	}
}
