package claimguard

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
