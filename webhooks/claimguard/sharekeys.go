package claimguard

import "k8s.io/client-go/tools/cache"

// The owner and claim keys of the objects a composite composed are equal
// strings: "group/Kind/name" of the composite and "namespace/name" of its
// claim, decoded anew for each object. So are the names in a composite's
// resource references and the names of the objects they name. Informers
// hold tens of thousands of these objects, so each new one takes the
// strings of an equal key or name from an object the owner index already
// holds, and its own decoded copies become garbage: one copy of each key
// for a composite and everything it composed, about 80 bytes less for
// each composed resource. The index keeps objects alive while they are
// cached, and drops them with their informer, so no table of strings
// outlives what holds them (unique.Make would keep the strings only until
// the next collection, unless each object held a handle, which costs more
// than it saves).

// transform is the informers' TransformFunc for watch w: transform, then
// shareKeys.
func (x *ownerIndex) transform(w *watch) cache.TransformFunc {
	return func(in any) (any, error) {
		out, err := transform(in)
		if o, ok := out.(*object); ok && out != in {
			x.shareKeys(w, o)
		}
		return out, err
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
			sibling := es[0].o
			o.owner = sibling.owner
			if o.claim != "" && sibling.claim == o.claim {
				o.claim = sibling.claim
			}
		}
	}
	if o.claim != "" {
		// A composite of the claim, or an object being deleted.
		if es := x.claims[o.claim]; len(es) > 0 {
			o.claim = es[0].o.claim
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
	if o.claim != "" && composed[0].o.claim == o.claim {
		o.claim = composed[0].o.claim
	}
	for i := range o.refs {
		r := &o.refs[i]
		for _, e := range composed {
			if e.w.gk == r.groupKind() && e.o.name() == r.name && e.o.namespace() == r.namespace.Value() {
				r.name = e.o.name()
				break
			}
		}
	}
}
