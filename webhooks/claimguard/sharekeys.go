package claimguard

import "sync"

// The owner keys of the objects a composite composed are equal strings,
// "group/Kind/name" of the composite, decoded anew for each object; so are
// the claim keys ("namespace/name") of a claim's composites and deleting
// objects, and the names in a composite's resource references and the
// names of the objects they name. Informers hold hundreds of thousands of
// these objects, so each new one takes the strings of an equal key or name
// from an object the owner index already holds, and its own decoded copies
// become garbage: one copy of each key for a composite and everything it
// composed. The index keeps objects alive while they are
// cached, and drops them with their informer, so no table of strings
// outlives what holds them (unique.Make would keep the strings only until
// the next collection, unless each object held a handle, which costs more
// than it saves).

// prepare is the Watch's Prepare for watch w: shareKeys, for each object
// just before its store keeps it. Sharing there rather than in the
// transform finds the objects of every kind listed before, since the
// transform of a list runs before any of the list is stored.
func (x *ownerIndex) prepare(w *watch) func(any) {
	return func(obj any) {
		if o, ok := obj.(*object); ok {
			x.shareKeys(w, o)
		}
	}
}

// shareKeys replaces o's owner and claim keys, and a composite's reference
// names, by equal strings of objects in the index. o is not stored yet, so
// nothing reads it meanwhile; the strings it takes are never changed.
func (x *ownerIndex) shareKeys(w *watch, o *object) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if o.owner != "" {
		// Another object the same composite composed.
		if es := x.owners[o.owner]; len(es) > 0 {
			o.owner = es[0].o.owner
		}
	}
	if c := o.claim(); c != "" {
		// A composite of the claim, or an object being deleted.
		if es := x.claims[c]; len(es) > 0 {
			o.more.claim = es[0].o.claim()
		}
	}
	if w == nil || w.role != roleComposite {
		return
	}
	// The objects this composite composed, already cached.
	composed := x.owners[ownerKey(w.gk, o.name())]
	if len(composed) == 0 {
		return
	}
	refs := o.refs()
	for i := range refs {
		r := &refs[i]
		for _, e := range composed {
			if e.w.gk == r.groupKind() && e.o.name() == r.name && e.o.namespace() == r.namespace.Value() {
				r.name = e.o.name()
				break
			}
		}
	}
}

// Sharing at store time alone leaves a gap while the first lists arrive:
// a list's objects are all transformed before any of them is stored, so
// each listed object holds its own copy of its owner key until then, and
// every kind lists at once. A key such as
// "database.example.org/XPostgreSQLInstance/db-x7k2p" takes 64 bytes, so
// 385k managed resources held some 23 MiB of keys only for the start-up,
// and the collector lets the heap grow by half as much again on top. So
// until every kind's first list is stored, the transform also takes owner
// keys from a table of the keys it has seen (listedKeys); the table is
// dropped once the caches are synced.

// listedKeys is the table of owner keys the first lists decoded.
type listedKeys struct {
	mu   sync.Mutex
	keys map[string]string // nil once the first lists are stored
}

func newListedKeys() *listedKeys { return &listedKeys{keys: map[string]string{}} }

// share gives o, just transformed, the owner key of an object transformed
// before it, and keeps o's for the next. It does nothing once done.
func (l *listedKeys) share(o *object) {
	if l == nil || o.owner == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		return
	}
	if k, ok := l.keys[o.owner]; ok {
		o.owner = k
		return
	}
	l.keys[o.owner] = o.owner
}

// done drops the table: the owner index shares keys from now on.
func (l *listedKeys) done() {
	l.mu.Lock()
	l.keys = nil
	l.mu.Unlock()
}

// sharing reports whether the table is still kept.
func (l *listedKeys) sharing() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keys != nil
}
