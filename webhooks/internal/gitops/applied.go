package gitops

import (
	"bytes"
	"encoding/json"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/object"
)

// AppliedFields are the fields a field manager's server-side apply entry
// owns on an object, as JSON pointers into the object as it stands: list
// items the entry names by their keys ("k:{"name":"web"}") or values
// ("v:...") become their indices. An item the object no longer has is
// left out. ok is false when the object has no such entry.
func AppliedFields(v *object.View, manager string) (fields []object.Pointer, ok bool) {
	entry := appliedEntry(v, manager)
	if entry == nil || entry.FieldsV1 == nil {
		return nil, false
	}
	var tree map[string]any
	if json.Unmarshal(entry.FieldsV1.GetRawBytes(), &tree) != nil {
		return nil, true
	}
	var doc any
	if json.Unmarshal(v.Raw(), &doc) != nil {
		return nil, true
	}
	w := appliedWalk{}
	w.node(tree, doc, nil)
	return w.fields, true
}

// AppliedEntryChanged reports whether an update changes the manager's
// apply entry (its fields, or its presence); its time and the other
// managers' entries may change.
func AppliedEntryChanged(old, cur *object.View, manager string) bool {
	a, b := appliedEntry(old, manager), appliedEntry(cur, manager)
	switch {
	case a == nil || b == nil:
		return (a == nil) != (b == nil)
	case a.FieldsV1 == nil || b.FieldsV1 == nil:
		return (a.FieldsV1 == nil) != (b.FieldsV1 == nil)
	}
	return !bytes.Equal(a.FieldsV1.GetRawBytes(), b.FieldsV1.GetRawBytes())
}

// appliedEntry is the manager's Apply entry of the object's main
// resource, nil when there is none.
func appliedEntry(v *object.View, manager string) *metav1.ManagedFieldsEntry {
	raw := v.Field("metadata", "managedFields")
	if raw == nil {
		return nil
	}
	var entries []metav1.ManagedFieldsEntry
	if json.Unmarshal(raw, &entries) != nil {
		return nil
	}
	for i := range entries {
		e := &entries[i]
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			return e
		}
	}
	return nil
}

// appliedWalk turns a fieldsV1 tree into pointers, following the object.
type appliedWalk struct {
	fields []object.Pointer
}

func (w *appliedWalk) node(tree map[string]any, doc any, path object.Pointer) {
	leaf := true
	for k, sub := range tree {
		if k == "." {
			continue
		}
		leaf = false
		token, child, ok := step(k, doc)
		if !ok {
			continue
		}
		next := append(path[:len(path):len(path)], token)
		if subtree, isMap := sub.(map[string]any); isMap && len(subtree) > 0 {
			w.node(subtree, child, next)
		} else {
			w.fields = append(w.fields, next)
		}
	}
	if _, self := tree["."]; (self || leaf) && len(path) > 0 {
		w.fields = append(w.fields, path)
	}
}

// step follows one fieldsV1 key into the object: "f:name" a member,
// "i:3" an index, "k:{...}" the list item with those key values, "v:..."
// the list item with that value.
func step(key string, doc any) (string, any, bool) {
	if len(key) < 2 || key[1] != ':' {
		return "", nil, false
	}
	rest := key[2:]
	switch key[0] {
	case 'f':
		m, _ := doc.(map[string]any)
		return rest, m[rest], true
	case 'i':
		list, _ := doc.([]any)
		i, err := strconv.Atoi(rest)
		if err != nil || i < 0 || i >= len(list) {
			return "", nil, false
		}
		return rest, list[i], true
	case 'k', 'v':
		var want any
		if json.Unmarshal([]byte(rest), &want) != nil {
			return "", nil, false
		}
		list, _ := doc.([]any)
		for i, item := range list {
			if matches(item, want, key[0] == 'k') {
				return strconv.Itoa(i), item, true
			}
		}
	}
	return "", nil, false
}

// matches reports whether a list item has the keys' values (k:) or is
// the value (v:).
func matches(item, want any, byKeys bool) bool {
	if !byKeys {
		a, _ := json.Marshal(item)
		b, _ := json.Marshal(want)
		return bytes.Equal(a, b)
	}
	m, _ := item.(map[string]any)
	keys, _ := want.(map[string]any)
	if m == nil || len(keys) == 0 {
		return false
	}
	for k, v := range keys {
		a, _ := json.Marshal(m[k])
		b, _ := json.Marshal(v)
		if !bytes.Equal(a, b) {
			return false
		}
	}
	return true
}

// maxAppliedChanges bounds the changed paths an update of an object
// guarded by its apply entry is read for: the guarded ones among them are
// listed, and a change beyond the bound is counted as guarded.
const maxAppliedChanges = 1000

// appliedChanges are changes where every owner guards only what its
// field manager applies (Owner.Applies).
func appliedChanges(old, cur *object.View, skip []object.Pointer, owners []Owner) (c object.Changes, refused string) {
	var owned []object.Pointer
	for _, o := range owners {
		fields, _ := AppliedFields(old, o.Applies)
		owned = append(owned, fields...)
	}
	all := object.Diff(old, cur, skip, maxAppliedChanges)
	for _, s := range all.First {
		p, err := object.ParsePointer(s)
		if err != nil || intersectsAny(p, owned) {
			c.Total++
			if len(c.First) < ListedPaths {
				c.First = append(c.First, s)
			}
		}
	}
	c.Total += all.Total - len(all.First)
	if c.Total == 0 {
		for _, o := range owners {
			if AppliedEntryChanged(old, cur, o.Applies) {
				return c, "/metadata/managedFields (the " + o.Applies + " apply entry, which says what it owns)"
			}
		}
	}
	return c, ""
}

// intersectsAny reports whether p is at, under or above one of fields.
func intersectsAny(p object.Pointer, fields []object.Pointer) bool {
	for _, f := range fields {
		if p.HasPrefix(f) || f.HasPrefix(p) {
			return true
		}
	}
	return false
}
