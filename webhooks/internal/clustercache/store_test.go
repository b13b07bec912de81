package clustercache

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/cache"
)

// recorder notes what a sink tells its handler, and what the store held
// when Prepare saw each object.
type recorder struct {
	store  cache.Indexer
	events []string
}

func (r *recorder) name(obj any) string {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return "tombstone " + t.Key
	}
	key, _ := cache.MetaNamespaceKeyFunc(obj)
	return key + " " + obj.(interface{ GetAnnotations() map[string]string }).GetAnnotations()["note"]
}

func (r *recorder) OnAdd(obj any, initial bool) {
	if initial {
		r.events = append(r.events, "add initial "+r.name(obj))
		return
	}
	r.events = append(r.events, "add "+r.name(obj))
}
func (r *recorder) OnUpdate(old, cur any) {
	r.events = append(r.events, "update "+r.name(old)+" -> "+r.name(cur))
}
func (r *recorder) OnDelete(obj any) { r.events = append(r.events, "delete "+r.name(obj)) }

func (r *recorder) prepare(obj any) {
	if old, stored, _ := r.store.Get(obj); stored && old == obj {
		r.events = append(r.events, "prepare an object already stored "+r.name(obj))
		return
	}
	r.events = append(r.events, "prepare "+r.name(obj))
}

// TestSinkAppliesListsAsAQueueOfSingleItemsWould: a list (one ReplacedAll
// item, as the Watch's queue hands it) deletes first what the store holds
// and the list lacks, then adds or updates each listed object; Prepare
// sees each new object before the store holds it, and never one already
// stored.
func TestSinkAppliesListsAsAQueueOfSingleItemsWould(t *testing.T) {
	store := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, nil)
	r := &recorder{store: store}
	s := &sink{indexer: store, keyFunc: cache.DeletionHandlingMetaNamespaceKeyFunc, handler: r, prepare: r.prepare}
	a1, b1, c2, a2 := kustomization("v1", "apps", "a", "1"), kustomization("v1", "apps", "b", "1"), kustomization("v1", "apps", "c", "2"), kustomization("v1", "apps", "a", "2")
	steps := []struct {
		deltas  cache.Deltas
		initial bool
	}{
		{cache.Deltas{{Type: cache.ReplacedAll, Object: cache.ReplacedAllInfo{Objects: []any{a1, b1}, ResourceVersion: "1"}}}, true},
		{cache.Deltas{{Type: cache.Updated, Object: b1}, {Type: cache.SyncAll, Object: cache.SyncAllInfo{}}}, false},
		// A relist after the watch was down: b was deleted, c created,
		// a changed.
		{cache.Deltas{{Type: cache.ReplacedAll, Object: cache.ReplacedAllInfo{Objects: []any{a2, c2}, ResourceVersion: "5"}}}, false},
		{cache.Deltas{{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: "apps/c", Obj: c2}}}, false},
	}
	for _, st := range steps {
		if err := s.apply(st.deltas, st.initial); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"prepare apps/a 1", "add initial apps/a 1", "prepare apps/b 1", "add initial apps/b 1",
		"update apps/b 1 -> apps/b 1",
		"delete tombstone apps/b", "prepare apps/a 2", "update apps/a 1 -> apps/a 2", "prepare apps/c 2", "add apps/c 2",
		"delete tombstone apps/c",
	}
	if diff := cmp.Diff(want, r.events); diff != "" {
		t.Errorf("events: -want, +got:\n%s", diff)
	}
	if keys := store.ListKeys(); len(keys) != 1 || keys[0] != "apps/a" {
		t.Errorf("the store holds %v, want only apps/a", keys)
	}
	if err := s.apply(cache.Deltas{{Type: "Unknown", Object: a1}}, false); err == nil {
		t.Error("an unknown delta type must be an error")
	}
	if err := s.apply(cache.Deltas{{Type: cache.ReplacedAll, Object: a1}}, false); err == nil {
		t.Error("a list without ReplacedAllInfo must be an error")
	}
}
