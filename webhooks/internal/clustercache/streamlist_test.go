package clustercache

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// streamServer answers a watch with the given events, then leaves the
// stream open (or closes it, if closeAfter), recording the options asked.
type streamServer struct {
	events     []watch.Event
	closeAfter bool
	asked      metav1.ListOptions
}

func (s *streamServer) watch(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	s.asked = o
	ch := make(chan watch.Event, len(s.events))
	for _, ev := range s.events {
		ch <- ev
	}
	if s.closeAfter {
		close(ch)
	}
	return watch.NewProxyWatcher(ch), nil
}

func annotated(name string, annotations map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7", Annotations: annotations}}
}

func endOfInitialEvents(rv string) watch.Event {
	return watch.Event{Type: watch.Bookmark, Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: rv, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}}}
}

func TestStreamListTransformsEachObjectUntilTheInitialEventsEnd(t *testing.T) {
	srv := &streamServer{events: []watch.Event{
		{Type: watch.Added, Object: annotated("a", map[string]string{"big": "not kept"})},
		{Type: watch.Bookmark, Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "8"}}},
		{Type: watch.Added, Object: annotated("b", map[string]string{"big": "not kept"})},
		endOfInitialEvents("9"),
		// After the bookmark the watch goes on; the list must not read it.
		{Type: watch.Added, Object: annotated("c", map[string]string{"big": "not kept"})},
	}}
	trim := (&pagedServer{}).trim
	var got []string
	rv, err := streamList(context.Background(), srv.watch, trim, func(kept any) {
		m := kept.(*metav1.PartialObjectMetadata)
		if m.Annotations != nil {
			t.Errorf("%s reached the list untransformed", m.Name)
		}
		got = append(got, m.Name)
	})
	if err != nil {
		t.Fatal(err)
	}
	if rv != "9" {
		t.Errorf("resource version %q, want the initial-events-end bookmark's 9", rv)
	}
	if fmt.Sprint(got) != "[a b]" {
		t.Errorf("listed %v, want [a b]", got)
	}
	o := srv.asked
	if o.SendInitialEvents == nil || !*o.SendInitialEvents || o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || !o.AllowWatchBookmarks || o.ResourceVersion != "" {
		t.Errorf("the stream asked %+v; want initial events and bookmarks, not older than the latest version", o)
	}
}

// TestStreamListFailsWhatItCannotFinish: each of these must fail the
// stream, so that the Watch lists in pages instead of storing a list that
// is partial or wrong.
func TestStreamListFailsWhatItCannotFinish(t *testing.T) {
	gone := apierrors.NewResourceExpired("too old")
	refused := errors.New("sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")
	for name, tc := range map[string]struct {
		srv     *streamServer
		refuse  error
		wantErr func(error) bool
	}{
		"the API server refuses to stream": {
			srv: &streamServer{}, refuse: refused,
			wantErr: func(err error) bool { return errors.Is(err, refused) },
		},
		"the stream ends before the bookmark": {
			srv:     &streamServer{events: []watch.Event{{Type: watch.Added, Object: annotated("a", nil)}}, closeAfter: true},
			wantErr: func(err error) bool { return errors.Is(err, errStreamEnded) },
		},
		"an error event": {
			srv:     &streamServer{events: []watch.Event{{Type: watch.Error, Object: &gone.ErrStatus}}},
			wantErr: apierrors.IsResourceExpired,
		},
		"a deletion before the bookmark": {
			srv: &streamServer{events: []watch.Event{
				{Type: watch.Added, Object: annotated("a", nil)},
				{Type: watch.Deleted, Object: annotated("a", nil)},
				endOfInitialEvents("9"),
			}},
			wantErr: func(err error) bool { return err != nil },
		},
		"a transform that fails": {
			srv: &streamServer{events: []watch.Event{{Type: watch.Added, Object: &metav1.Status{}}, endOfInitialEvents("9")}},
			wantErr: func(err error) bool {
				return err != nil && !apierrors.IsResourceExpired(err) && !errors.Is(err, errStreamEnded)
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			watchFn := tc.srv.watch
			if tc.refuse != nil {
				watchFn = func(context.Context, metav1.ListOptions) (watch.Interface, error) { return nil, tc.refuse }
			}
			rv, err := streamList(context.Background(), watchFn, (&pagedServer{}).trim, func(any) {})
			if !tc.wantErr(err) {
				t.Errorf("streamList = %q, %v; not the failure expected", rv, err)
			}
		})
	}
}

// TestStreamListStopsWithItsContext: a Watch stopped while it lists
// returns at once instead of waiting for a bookmark that is not coming.
func TestStreamListStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := &streamServer{events: []watch.Event{{Type: watch.Added, Object: annotated("a", nil)}}}
	cancel()
	if _, err := streamList(ctx, srv.watch, nil, func(any) {}); !errors.Is(err, context.Canceled) {
		t.Errorf("streamList after its context ended = %v, want context.Canceled", err)
	}
}

// TestQueueHandsOverTheStagedListAndTransformsWatchEvents: a list reaches
// the store as the array its list function staged, not transformed again;
// a watch event is transformed once.
func TestQueueHandsOverTheStagedListAndTransformsWatchEvents(t *testing.T) {
	srv := &pagedServer{}
	q := newQueue("test", cache.DeletionHandlingMetaNamespaceKeyFunc, srv.trim, func() {})
	staged := []any{annotated("a", nil), annotated("b", nil)}
	q.stage(staged)
	if err := q.Replace(nil, "9"); err != nil {
		t.Fatal(err)
	}
	if err := q.Add(annotated("c", map[string]string{"big": "not kept"})); err != nil {
		t.Fatal(err)
	}
	var got []cache.Delta
	for range 2 {
		if _, err := q.Pop(func(obj any, _ bool) error {
			got = append(got, obj.(cache.Deltas)...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	list, ok := got[0].Object.(cache.ReplacedAllInfo)
	if !ok || len(list.Objects) != 2 || &list.Objects[0] != &staged[0] {
		t.Errorf("the list reached the store as %#v, want the staged array itself", got[0].Object)
	}
	if srv.transformed != 1 {
		t.Errorf("the transform ran %d times, want once, for the watch event", srv.transformed)
	}
	if m := got[1].Object.(*metav1.PartialObjectMetadata); m.Name != "c" || m.Annotations != nil {
		t.Errorf("the watch event reached the store as %+v, want it transformed", m)
	}
	// A second list with nothing staged is an empty list, not the first
	// one again.
	if err := q.Replace(nil, "10"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Pop(func(obj any, _ bool) error {
		if n := len(obj.(cache.Deltas)[0].Object.(cache.ReplacedAllInfo).Objects); n != 0 {
			t.Errorf("a list with nothing staged handed over %d objects", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
