package gitops

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"unique"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Inventory is an owner's record of the objects it applied (a Flux
// Kustomization's or HelmRelease's status.inventory, an Argo CD
// Application's status.resources), kept as the cache needs it: one
// string of sorted ids and their offsets, about the id's length plus four
// bytes an entry, where a map or a slice of strings would add 16 to 50
// more. A cluster's inventories hold every object GitOps deployed, so
// their entries are most of what the GitOps guards cache.
type Inventory struct {
	ids  string
	ends []uint32
}

// InventoryID is an entry's id in Flux's format,
// "<namespace>_<name>_<group>_<kind>" (cli-utils' ObjMetadata), which
// every Inventory uses: the core group and a cluster-scoped object's
// namespace are empty. RBAC kinds may have ":" in their names, which
// Flux writes as "__".
func InventoryID(namespace, name, group, kind string) string {
	return string(appendID(nil, namespace, name, group, kind))
}

// InventoryGroupKind reads the group and kind of an InventoryID: its last
// two parts, which, unlike a name, never hold "_".
func InventoryGroupKind(id string) (group, kind string, ok bool) {
	i := strings.LastIndexByte(id, '_')
	if i < 0 || i == len(id)-1 {
		return "", "", false
	}
	j := strings.LastIndexByte(id[:i], '_')
	if j < 0 {
		return "", "", false
	}
	return id[j+1 : i], id[i+1:], true
}

// NewInventory builds an inventory from ids in any order; duplicates are
// kept once.
func NewInventory(ids []string) Inventory {
	if len(ids) == 0 {
		return Inventory{}
	}
	sorted := slices.Clone(ids)
	sort.Strings(sorted)
	sorted = slices.Compact(sorted)
	n := 0
	for _, id := range sorted {
		n += len(id)
	}
	var b strings.Builder
	b.Grow(n)
	ends := make([]uint32, len(sorted))
	for i, id := range sorted {
		b.WriteString(id)
		ends[i] = uint32(b.Len())
	}
	return Inventory{ids: b.String(), ends: ends}
}

// HasObject reports whether the inventory lists the object, as Has of its
// InventoryID does, without building the id: it is asked on every
// decision.
func (inv Inventory) HasObject(namespace, name, group, kind string) bool {
	var buf [256]byte
	id := appendID(buf[:0], namespace, name, group, kind)
	// string(id) in comparisons does not allocate.
	i := sort.Search(len(inv.ends), func(i int) bool { return inv.at(i) >= string(id) })
	return i < len(inv.ends) && inv.at(i) == string(id)
}

// Lists reports whether the inventory lists the object ref names.
func (inv Inventory) Lists(ref Ref) bool {
	return inv.HasObject(ref.Namespace, ref.Name, ref.Group, ref.Kind)
}

// appendID appends InventoryID's text to b.
func appendID(b []byte, namespace, name, group, kind string) []byte {
	b = append(b, namespace...)
	b = append(b, '_')
	if group == "rbac.authorization.k8s.io" {
		for i := 0; i < len(name); i++ {
			if name[i] == ':' {
				b = append(b, '_', '_')
			} else {
				b = append(b, name[i])
			}
		}
	} else {
		b = append(b, name...)
	}
	b = append(b, '_')
	b = append(b, group...)
	b = append(b, '_')
	return append(b, kind...)
}

// Len is the number of entries.
func (inv Inventory) Len() int { return len(inv.ends) }

func (inv Inventory) at(i int) string {
	start := uint32(0)
	if i > 0 {
		start = inv.ends[i-1]
	}
	return inv.ids[start:inv.ends[i]]
}

// Has reports whether the inventory lists the id.
func (inv Inventory) Has(id string) bool {
	i := sort.Search(len(inv.ends), func(i int) bool { return inv.at(i) >= id })
	return i < len(inv.ends) && inv.at(i) == id
}

// Bytes is the memory the inventory holds, for the benchmarks.
func (inv Inventory) Bytes() int { return len(inv.ids) + 4*cap(inv.ends) }

// DistinctKinds are the kinds of an owner's record, each once, sorted by
// group, kind and version, in a slice of their own length: the audit
// lists each kind its owners deployed once. The strings are shared with
// every other owner's.
func DistinctKinds(gvks []schema.GroupVersionKind) []schema.GroupVersionKind {
	if len(gvks) == 0 {
		return nil
	}
	sorted := slices.Clone(gvks)
	slices.SortFunc(sorted, compareKinds)
	sorted = slices.Compact(sorted)
	// A slice of its own: the sorted copy's array, one element for each
	// of the record's entries, would stay behind a clipped slice.
	out := make([]schema.GroupVersionKind, len(sorted))
	for i, gvk := range sorted {
		out[i] = schema.GroupVersionKind{Group: intern(gvk.Group), Version: intern(gvk.Version), Kind: intern(gvk.Kind)}
	}
	return out
}

func compareKinds(a, b schema.GroupVersionKind) int {
	return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Version, b.Version))
}

func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}
