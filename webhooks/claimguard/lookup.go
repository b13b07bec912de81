package claimguard

import (
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// maxListed is how many composed resources a message names.
const maxListed = 5

// found is an object found in a cache, with its kind.
type found struct {
	*object
	gk schema.GroupKind
	// unwatched marks a resource reference of a kind claimguard does not
	// cache: it is named from the composite's spec and may already be gone.
	unwatched bool
}

// coverage records kinds a lookup across kinds could not search, so the
// decision can say so instead of silently allowing.
type coverage struct {
	unchecked []string
}

func (c *coverage) skip(w *watch) {
	why := "its cache has not synced yet"
	if w.state() == stateForbidden {
		why = "Steward may not list it"
	}
	c.unchecked = append(c.unchecked, w.gvr.GroupResource().String()+" ("+why+")")
}

// byIndex returns the objects of one watch under an index value.
func byIndex(w *watch, index, value string) []found {
	if index != indexExternalName {
		var out []found
		for _, e := range w.owners.get(index, value) {
			if o := stored(w, e, index, value); o != nil {
				out = append(out, found{object: o, gk: w.gk})
			}
		}
		return out
	}
	items, err := w.indexer.ByIndex(index, value)
	if err != nil || len(items) == 0 {
		return nil
	}
	out := make([]found, 0, len(items))
	for _, it := range items {
		if o, ok := it.(*object); ok {
			out = append(out, found{object: o, gk: w.gk})
		}
	}
	return out
}

// stored returns the object w's store holds under the key of an index
// entry of w, if it is still under value in index; else nil. The index
// follows the store a moment late, so an entry may name an object the
// store has since replaced or dropped: the store's answer wins.
func stored(w *watch, e indexed, index, value string) *object {
	if e.w != w {
		return nil
	}
	item, ok, err := w.indexer.GetByKey(e.o.key())
	if err != nil || !ok {
		return nil
	}
	o, ok := item.(*object)
	switch {
	case !ok:
		return nil
	case o == e.o:
		return o
	case index == indexOwner && o.owner == value:
		return o
	case index == indexClaim && claimOf(w, o) == value:
		return o
	}
	return nil
}

// acrossKinds looks an owner or claim up in every synced watch, in the
// order of the watches.
func (s *snapshot) acrossKinds(index, value string, cov *coverage) []found {
	var es []indexed
	looked := false
	var out []found
	for _, w := range s.all {
		if w.state() != stateSynced {
			cov.skip(w)
			continue
		}
		if !looked {
			// Every watch of a snapshot shares one index.
			es, looked = w.owners.get(index, value), true
		}
		for _, e := range es {
			if o := stored(w, e, index, value); o != nil {
				out = append(out, found{object: o, gk: w.gk})
			}
		}
	}
	return out
}

// composed returns the resources a composite resource composed that still
// exist: cached objects whose controller owner it is, and the references of
// its spec whose kinds claimguard does not cache.
func (s *snapshot) composed(gk schema.GroupKind, xr *object, namespaced bool, cov *coverage) []found {
	var out []found
	for _, f := range s.acrossKinds(indexOwner, ownerKey(gk, xr.name()), cov) {
		if namespaced && f.namespace() != xr.namespace() {
			continue
		}
		out = append(out, f)
	}
	for _, r := range xr.refs() {
		rgk := r.groupKind()
		if s.watchFor(rgk) != nil {
			continue
		}
		out = append(out, found{object: &object{id: newID(r.namespace.Value(), r.name)}, gk: rgk, unwatched: true})
	}
	sortFound(out)
	return out
}

// sortFound orders objects: deleting before live, oldest deletion first,
// then by kind and name, so messages are stable.
func sortFound(fs []found) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.deleting() != b.deleting() {
			return a.deleting()
		}
		if a.deleting() && !a.deletion.Equal(b.deletion) {
			return a.deletion.Before(b.deletion)
		}
		if a.gk.Kind != b.gk.Kind {
			return a.gk.Kind < b.gk.Kind
		}
		return a.key() < b.key()
	})
}

func onlyDeleting(fs []found) []found {
	var out []found
	for _, f := range fs {
		if f.deleting() {
			out = append(out, f)
		}
	}
	return out
}
