package gitops

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/object"
)

// Git's fields are read from the tool's own record: the API server keeps,
// per field manager, the fields each one set (managedFields). The fields
// the tool's managers own on the stored object (the request's oldObject)
// are what it applies from Git and puts back; a field only someone else
// set is not in Git, and what the tool does with it depends on the tool
// (Owner.Undeclared).

// declared are the fields the tool's field managers own on an object, as
// their managedFields entries of the main resource record them.
type declared struct {
	// trees are the entries' decoded fieldsV1 documents.
	trees []map[string]any
}

// fieldEntries decodes an object's managedFields; nil when it has none or
// they do not decode (the API server only stores valid ones).
func fieldEntries(v *object.View) []metav1.ManagedFieldsEntry {
	raw := v.Field("metadata", "managedFields")
	if raw == nil {
		return nil
	}
	var entries []metav1.ManagedFieldsEntry
	if json.Unmarshal(raw, &entries) != nil {
		return nil
	}
	return entries
}

// declaredBy reads the fields managers own in entries. ok is false when
// none of the managers has an entry of the main resource: the object was
// written before the tool recorded itself (or by another tool), and
// nothing tells Git's fields from others'.
func declaredBy(entries []metav1.ManagedFieldsEntry, managers []string) (d declared, ok bool) {
	for i := range entries {
		e := &entries[i]
		if e.Subresource != "" || !slices.Contains(managers, e.Manager) {
			continue
		}
		ok = true
		if e.FieldsV1 == nil {
			continue
		}
		var tree map[string]any
		if json.Unmarshal(e.FieldsV1.GetRawBytes(), &tree) == nil {
			d.trees = append(d.trees, tree)
		}
	}
	return d, ok
}

// owns reports whether the managers own the field at p of v, or a field
// above or below it: a change there changes what the tool applies.
func (d declared) owns(v *object.View, p object.Pointer) bool {
	for _, t := range d.trees {
		if ownsIn(t, v, p) {
			return true
		}
	}
	return false
}

// ownsIn follows p through one fieldsV1 tree. Reaching the end of p, or a
// leaf of the tree (a field owned as a whole) on the way, means owned; a
// token the tree has no key for means not.
func ownsIn(tree map[string]any, v *object.View, p object.Pointer) bool {
	node := tree
	for i, tok := range p {
		if len(node) == 0 {
			return true // an atomic field above p
		}
		child, ok := childOf(node, v, p[:i], tok)
		if !ok {
			return false
		}
		node = child
	}
	return true
}

// childOf finds the fieldsV1 key for token tok under the object's field
// at parent: "f:<tok>" for a member, "i:<tok>" for an atomic list's
// index, and for a list known by keys or values ("k:{...}", "v:..."), the
// key that matches the item at index tok of the stored object.
func childOf(node map[string]any, v *object.View, parent object.Pointer, tok string) (map[string]any, bool) {
	if c, ok := node["f:"+tok]; ok {
		m, _ := c.(map[string]any)
		return m, true
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 {
		return nil, false
	}
	if c, ok := node["i:"+tok]; ok {
		m, _ := c.(map[string]any)
		return m, true
	}
	var item any
	loaded := false
	for k, c := range node {
		if len(k) < 2 || (k[0] != 'k' && k[0] != 'v') || k[1] != ':' {
			continue
		}
		if !loaded {
			item, loaded = listItem(v, parent, i), true
		}
		if item != nil && itemMatches(item, k) {
			m, _ := c.(map[string]any)
			return m, true
		}
	}
	return nil, false
}

// listItem decodes the item at index i of the list at p in v; nil when
// there is none.
func listItem(v *object.View, p object.Pointer, i int) any {
	raw := fieldAt(v, p)
	var list []json.RawMessage
	if raw == nil || json.Unmarshal(raw, &list) != nil || i >= len(list) {
		return nil
	}
	var item any
	if json.Unmarshal(list[i], &item) != nil {
		return nil
	}
	return item
}

// fieldAt is the raw value at p, through lists as well as objects.
func fieldAt(v *object.View, p object.Pointer) []byte {
	// The longest prefix of object members the view reads itself.
	n := 0
	for n < len(p) {
		if _, err := strconv.Atoi(p[n]); err == nil {
			break
		}
		n++
	}
	raw := v.Field(p[:n]...)
	for _, tok := range p[n:] {
		raw = step(raw, tok)
		if raw == nil {
			return nil
		}
	}
	return raw
}

// step reads one token into a raw JSON value: a member, or an index.
func step(raw []byte, tok string) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	switch raw[0] {
	case '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
		return m[tok]
	case '[':
		i, err := strconv.Atoi(tok)
		var list []json.RawMessage
		if err != nil || json.Unmarshal(raw, &list) != nil || i < 0 || i >= len(list) {
			return nil
		}
		return list[i]
	}
	return nil
}

// itemMatches reports whether a list item is the one a fieldsV1 key
// names: "k:{...}" by its key fields' values, "v:..." by its value.
func itemMatches(item any, key string) bool {
	var want any
	d := json.NewDecoder(strings.NewReader(key[2:]))
	if d.Decode(&want) != nil {
		return false
	}
	if key[0] == 'v' {
		return reflect.DeepEqual(normalize(item), normalize(want))
	}
	m, _ := item.(map[string]any)
	keys, _ := want.(map[string]any)
	if m == nil || len(keys) == 0 {
		return false
	}
	for k, w := range keys {
		if !reflect.DeepEqual(normalize(m[k]), normalize(w)) {
			return false
		}
	}
	return true
}

// normalize makes numbers compare by value: the object and the key may
// spell the same port differently only in how they were decoded.
func normalize(x any) any {
	if f, ok := x.(float64); ok {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return x
}

// entriesChanged reports whether an update changes the fields, or the
// presence, of one of the managers' entries of the main resource; their
// times and the other managers' entries may change.
func entriesChanged(old, cur []metav1.ManagedFieldsEntry, managers []string) bool {
	a, b := ownEntries(old, managers), ownEntries(cur, managers)
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		if a[i].Manager != b[i].Manager || a[i].Operation != b[i].Operation || !bytes.Equal(rawFields(a[i]), rawFields(b[i])) {
			return true
		}
	}
	return false
}

func ownEntries(entries []metav1.ManagedFieldsEntry, managers []string) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, e := range entries {
		if e.Subresource == "" && slices.Contains(managers, e.Manager) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(x, y metav1.ManagedFieldsEntry) int {
		return strings.Compare(x.Manager+"\x00"+string(x.Operation), y.Manager+"\x00"+string(y.Operation))
	})
	return out
}

func rawFields(e metav1.ManagedFieldsEntry) []byte {
	if e.FieldsV1 == nil {
		return nil
	}
	return e.FieldsV1.GetRawBytes()
}

// writersOf are the field managers an update wrote as: the entries of the
// main resource that are new, or whose fields or time changed. The API
// server records the request's manager before admission, so the
// review's object already carries it.
func writersOf(old, cur []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range cur {
		if e.Subresource != "" {
			continue
		}
		i := slices.IndexFunc(old, func(o metav1.ManagedFieldsEntry) bool {
			return o.Manager == e.Manager && o.Operation == e.Operation && o.Subresource == ""
		})
		if i < 0 || !bytes.Equal(rawFields(old[i]), rawFields(e)) || !sameTime(old[i].Time, e.Time) {
			if !slices.Contains(out, e.Manager) {
				out = append(out, e.Manager)
			}
		}
	}
	return out
}

func sameTime(a, b *metav1.Time) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.Equal(b))
}
