package claimguard

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestObjectStoreAnswersAsClientGosIndexer applies the same random adds,
// updates, deletes and replaces to claimguard's store and to client-go's
// indexer with the same index, and compares every answer: with real
// hashes, and with a hash that makes every key collide.
func TestObjectStoreAnswersAsClientGosIndexer(t *testing.T) {
	for name, hash := range map[string]func(string) uint64{
		"hashed":           hashKey,
		"all keys collide": func(string) uint64 { return 7 },
		"two buckets":      func(k string) uint64 { return uint64(len(k) % 2) },
	} {
		t.Run(name, func(t *testing.T) {
			ours := newObjectStore()
			ours.hash = hash
			theirs := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, ours.GetIndexers())
			rng := rand.New(rand.NewPCG(1, 2))
			rv := 0
			random := func() *object {
				rv++
				o := &object{}
				ns := []string{"", "team-a", "team-b"}[rng.IntN(3)]
				ext := []string{"", "db", "cache", fmt.Sprint("n", rng.IntN(5))}[rng.IntN(4)]
				o.setID(ns, fmt.Sprint("o", rng.IntN(40)), fmt.Sprint(rv), ext)
				if rng.IntN(3) == 0 {
					d := metav1.NewTime(now.Add(-time.Duration(rng.IntN(60)) * time.Second))
					o.deletion = &d
				}
				return o
			}
			for step := range 3000 {
				o := random()
				switch op := rng.IntN(20); {
				case op == 0:
					var list []any
					for range rng.IntN(30) {
						list = append(list, random())
					}
					list = dedupByKey(list)
					mustAgree(t, ours.Replace(list, "r"), theirs.Replace(list, "r"))
				case op < 6:
					mustAgree(t, ours.Delete(o), theirs.Delete(o))
				case op < 8:
					mustAgree(t, ours.Delete(cache.DeletedFinalStateUnknown{Key: o.key(), Obj: o}), theirs.Delete(cache.DeletedFinalStateUnknown{Key: o.key(), Obj: o}))
				default:
					mustAgree(t, ours.Update(o), theirs.Update(o))
				}
				if diff := cmp.Diff(answers(theirs), answers(ours)); diff != "" {
					t.Fatalf("step %d: the stores disagree: -client-go, +claimguard:\n%s", step, diff)
				}
			}
			if ours.Len() != len(theirs.ListKeys()) {
				t.Errorf("Len() = %d, the store holds %d", ours.Len(), len(theirs.ListKeys()))
			}
		})
	}
}

func mustAgree(t *testing.T, ours, theirs error) {
	t.Helper()
	if ours != nil || theirs != nil {
		t.Fatalf("errors: claimguard %v, client-go %v", ours, theirs)
	}
}

// dedupByKey keeps the last object of each key, as a list has each once.
func dedupByKey(list []any) []any {
	seen := map[string]int{}
	var out []any
	for _, item := range list {
		k := item.(*object).key()
		if i, ok := seen[k]; ok {
			out[i] = item
			continue
		}
		seen[k] = len(out)
		out = append(out, item)
	}
	return out
}

// answers is everything a store says: each key with the id of its object,
// and the objects under each value of the external-name index.
func answers(s cache.Indexer) map[string]string {
	out := map[string]string{}
	for _, key := range s.ListKeys() {
		item, ok, err := s.GetByKey(key)
		if !ok || err != nil {
			out["key "+key] = fmt.Sprintf("listed but not found: %v", err)
			continue
		}
		out["key "+key] = item.(*object).id
	}
	for _, item := range s.List() {
		out["listed "+item.(*object).key()] = item.(*object).id
	}
	for _, v := range s.ListIndexFuncValues(indexExternalName) {
		items, err := s.ByIndex(indexExternalName, v)
		var ids []string
		for _, item := range items {
			ids = append(ids, item.(*object).id)
		}
		slices.Sort(ids)
		if len(ids) > 0 || err != nil {
			out["external name "+v] = fmt.Sprint(ids, err)
		}
	}
	return out
}

func TestObjectStoreRefusesWhatItCannotHold(t *testing.T) {
	s := newObjectStore()
	if err := s.Add("not an object"); err == nil {
		t.Error("Add of a string must fail")
	}
	if _, err := s.ByIndex("owner", "x"); err == nil {
		t.Error("ByIndex of an index the store does not keep must fail")
	}
	if err := s.AddIndexers(cache.Indexers{"x": nil}); err == nil {
		t.Error("AddIndexers must fail")
	}
}
