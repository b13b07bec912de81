package claimguard

import (
	"sync"

	"k8s.io/client-go/tools/cache"
)

// The indexes claimguard's checks look objects up by.
const (
	// indexOwner maps "group/Kind/name" of a controller owner to the
	// objects it composed (every cached object). It is an ownerIndex.
	indexOwner = "owner"
	// indexClaim maps "namespace/name" of a claim to the objects labelled
	// for it: every composite resource, but only managed resources that are
	// being deleted, since only those matter and there are many more. It
	// is an ownerIndex.
	indexClaim = "claim"
	// indexExternalName maps crossplane.io/external-name to the objects
	// with that name that are being deleted; live objects are never looked
	// up by external name, so they stay out of the index. The watches'
	// stores keep it (objectStore): it holds few objects.
	indexExternalName = "externalName"
)

func one(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func byTerminatingExternalName(obj any) ([]string, error) {
	if o, ok := obj.(*object); ok && o.deleting() {
		return one(o.externalName()), nil
	}
	return nil, nil
}

// ownerIndex finds cached objects by their controller owner and by their
// claim, across every watched kind. An informer index keeps one set of
// keys per value and kind: almost every composed resource has an owner of
// its own in its kind, so that is one small map per managed resource,
// about as large as the cached object itself. Here each owner and each
// claim has one entry for all kinds, holding the objects themselves.
//
// The informers' event handlers keep it (see handler), so it follows each
// store a moment after the store changes, as a store follows the API
// server; a watch is synced only once its handler has seen the first list.
// Entry slices are never changed once stored, only replaced, so readers
// use them without copying.
type ownerIndex struct {
	mu     sync.RWMutex
	owners map[string][]indexed
	claims map[string][]indexed
}

// indexed is one cached object and the watch whose store holds it.
type indexed struct {
	w *watch
	o *object
}

func newOwnerIndex() *ownerIndex {
	return &ownerIndex{owners: map[string][]indexed{}, claims: map[string][]indexed{}}
}

// claimOf is the claim an object is indexed under: a composite's claim,
// and a managed resource's only while it is being deleted.
func claimOf(w *watch, o *object) string {
	if w.role == roleManaged && !o.deleting() {
		return ""
	}
	return o.claim()
}

// handler keeps the index from one watch's informer events.
func (x *ownerIndex) handler(w *watch) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(*object); ok {
				x.update(w, nil, o)
			}
		},
		UpdateFunc: func(old, cur any) {
			o, _ := old.(*object)
			n, _ := cur.(*object)
			x.update(w, o, n)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(*object); ok {
				x.update(w, o, nil)
			}
		},
	}
}

// update replaces old by cur (either may be nil) for watch w, under one
// lock, so a reader finds one or the other.
func (x *ownerIndex) update(w *watch, old, cur *object) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if w.dropped {
		return
	}
	var oldOwner, oldClaim string
	if old != nil {
		oldOwner, oldClaim = old.owner, claimOf(w, old)
	}
	if cur == nil {
		remove(x.owners, oldOwner, w, old)
		remove(x.claims, oldClaim, w, old)
		return
	}
	put(x.owners, oldOwner, cur.owner, w, old, cur)
	put(x.claims, oldClaim, claimOf(w, cur), w, old, cur)
}

// put moves one object of w from the entry of oldKey to that of key. An
// object stored again under its namespace and name replaces the one before.
func put(m map[string][]indexed, oldKey, key string, w *watch, old, cur *object) {
	if oldKey != key {
		remove(m, oldKey, w, old)
	}
	if key == "" {
		return
	}
	es := m[key]
	for i, e := range es {
		if e.w == w && e.o.ident() == cur.ident() {
			c := make([]indexed, len(es))
			copy(c, es)
			c[i].o = cur
			m[key] = c
			return
		}
	}
	insert(m, key, w, cur)
}

// insert appends to a copy of the entry, sized exactly.
func insert(m map[string][]indexed, key string, w *watch, o *object) {
	if key == "" {
		return
	}
	old := m[key]
	es := make([]indexed, len(old), len(old)+1)
	copy(es, old)
	m[key] = append(es, indexed{w: w, o: o})
}

// remove drops the object of w with o's namespace and name from a copy of
// the entry.
func remove(m map[string][]indexed, key string, w *watch, o *object) {
	if key == "" {
		return
	}
	old := m[key]
	at := -1
	for i, e := range old {
		if e.w == w && e.o.ident() == o.ident() {
			at = i
			break
		}
	}
	switch {
	case at < 0:
	case len(old) == 1:
		delete(m, key)
	default:
		es := make([]indexed, 0, len(old)-1)
		m[key] = append(append(es, old[:at]...), old[at+1:]...)
	}
}

// drop forgets a watch that stopped: its objects leave the index, and its
// informer's late events are ignored.
func (x *ownerIndex) drop(w *watch) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if w.dropped {
		return
	}
	w.dropped = true
	for _, m := range []map[string][]indexed{x.owners, x.claims} {
		for key, es := range m {
			keep := 0
			for _, e := range es {
				if e.w != w {
					keep++
				}
			}
			switch {
			case keep == len(es):
			case keep == 0:
				delete(m, key)
			default:
				out := make([]indexed, 0, keep)
				for _, e := range es {
					if e.w != w {
						out = append(out, e)
					}
				}
				m[key] = out
			}
		}
	}
}

// dropAll forgets every watch at once, when all stop.
func (x *ownerIndex) dropAll(ws []*watch) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, w := range ws {
		w.dropped = true
	}
	clear(x.owners)
	clear(x.claims)
}

// get returns the entry of an index value; callers must not change it.
func (x *ownerIndex) get(index, value string) []indexed {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if index == indexOwner {
		return x.owners[value]
	}
	return x.claims[value]
}
