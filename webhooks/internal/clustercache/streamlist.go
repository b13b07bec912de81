package clustercache

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// Why a Watch streams its list itself.
//
// client-go's reflector, when the API server streams the initial list
// (WatchList), keeps each streamed object in a temporary store until the
// stream's last one, and only then hands the store a list of them: a map
// entry and a key string per object, then two arrays of the whole list,
// all held at once beside the objects themselves, for every kind
// streaming at the same time. With 500k cached objects the start-up peak
// was 1.56 times the memory Steward keeps once synced. So a Watch tells
// the reflector it cannot stream, and its list streams instead
// (streamList): each object is transformed as it arrives and appended to
// one array, which goes to the store as it is (see acceptingQueue.stage).
// Then the reflector watches from the stream's resource version, as after
// any list.

// streamTimeout bounds one streamed list; one that takes longer fails
// and is listed in pages instead.
const streamTimeout = 10 * time.Minute

// errStreamEnded is a stream that ended before its initial list did.
var errStreamEnded = errors.New("the API server ended the stream before its initial-events-end bookmark")

// streamList lists through watchFn by a watch that first sends every
// object (sendInitialEvents), handing each to add once transformed, and
// returns the resource version of the bookmark that ends the initial
// events. An API server that cannot stream fails it; the caller then
// lists in pages, as client-go's reflector falls back to a list.
func streamList(ctx context.Context, watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), transform cache.TransformFunc, add func(kept any)) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, streamTimeout)
	defer cancel()
	w, err := watchFn(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       ptr.To(int64(streamTimeout / time.Second)),
	})
	if err != nil {
		return "", err
	}
	defer w.Stop()
	for {
		var ev watch.Event
		var open bool
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case ev, open = <-w.ResultChan():
		}
		if !open {
			return "", errStreamEnded
		}
		switch ev.Type {
		case watch.Added:
			var kept any = ev.Object
			if transform != nil {
				if kept, err = transform(ev.Object); err != nil {
					return "", fmt.Errorf("transforming a streamed object: %w", err)
				}
			}
			add(kept)
		case watch.Bookmark:
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				return "", fmt.Errorf("reading a bookmark: %w", err)
			}
			if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				return m.GetResourceVersion(), nil
			}
		case watch.Error:
			return "", apierrors.FromObject(ev.Object)
		default:
			// The API server sends the initial list as additions only,
			// then the bookmark; a list of additions cannot take back
			// an object it holds, so anything else fails the stream.
			return "", fmt.Errorf("a %s event before the initial-events-end bookmark", ev.Type)
		}
	}
}
