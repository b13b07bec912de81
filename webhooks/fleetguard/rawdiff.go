package fleetguard

import (
	"bytes"
	"strconv"

	"github.com/stewardhq/steward/webhooks/internal/rawjson"
)

// Updates are judged on raw members (rawjson reads them in place) so that
// only the parts that differ are ever read past their bytes; managedFields
// and status, most of an object's bytes, never are. Members whose text is
// identical are skipped unread (identical text decodes to identical
// values); skipped paths are never read; where the text differs, the
// structural comparison decides.

// A member is one member of a JSON object or one element of a list, as
// rawjson splits them.
type member = rawjson.Member

// Kinds of raw values; a missing value (nil) counts as null.
const (
	rawNull = iota
	rawObject
	rawList
	rawScalar
)

func rawKind(v []byte) int {
	if len(v) == 0 {
		return rawNull
	}
	switch v[0] {
	case 'n':
		return rawNull
	case '{':
		return rawObject
	case '[':
		return rawList
	}
	return rawScalar
}

// walkRaw reports the paths under the current one at which a and b, raw
// values of the old and new object, differ; either is nil when missing.
// An added or removed subtree is reported leaf by leaf, counting a
// missing value as an empty object or list: every path can be pasted
// into ignoredFields as it is, and ignored paths inside it still apply.
func (d *differ) walkRaw(a, b []byte, depth int) {
	if identical(a, b, depth) || d.skipped() || (rawEmpty(a) && rawEmpty(b)) {
		return
	}
	if depth >= maxDiffDepth {
		if !d.same(a, b) {
			d.report()
		}
		return
	}
	ka, kb := rawKind(a), rawKind(b)
	switch {
	case (ka == rawObject || ka == rawNull) && (kb == rawObject || kb == rawNull):
		d.walkRawObjects(a, b, ka == rawObject, kb == rawObject, depth)
	case (ka == rawList || ka == rawNull) && (kb == rawList || kb == rawNull):
		d.walkRawLists(a, b, ka == rawList, kb == rawList, depth)
	case ka == rawScalar && kb == rawScalar && d.same(a, b):
		// The same string, escaped differently.
	default:
		// A type change, or two different scalars.
		d.report()
	}
}

// maxLazyDepth is how deep the diff skips members whose text is identical
// in both objects. Comparing a member's text reads everything nested in
// it, so the shortcut, repeated at every level, reads the deepest bytes
// once per level; below this depth members are compared structurally,
// which through the objects' indexes reads each byte once.
const maxLazyDepth = 16

// identical reports whether two raw values at the given depth are the
// same text, above maxLazyDepth: identical text decodes to identical
// values, so the structural comparison would find nothing in them.
func identical(a, b []byte, depth int) bool {
	return depth < maxLazyDepth && bytes.Equal(a, b)
}

// rawEmpty reports whether a raw value is missing, null, {} or []: the
// API server omits empty fields, so their presence alone is no change.
func rawEmpty(v []byte) bool {
	switch rawKind(v) {
	case rawNull:
		return true
	case rawObject, rawList:
		return rawjson.SkipSpace(v, 1) == len(v)-1
	}
	return false
}

// same reports whether a and b, raw values of the old and new object,
// decode to equal values; unlike walkRaw, it counts no empty value equal
// to another of a different type.
func (d *differ) same(a, b []byte) bool {
	return rawjson.Equal(&d.docs[0].ix, a, &d.docs[1].ix, b)
}

// walkRawObjects compares two objects key by key, in key order. Members
// split here are appended to d.buf and dropped on return; deeper levels
// only append past them, so the slices below stay valid even when d.buf
// moves.
func (d *differ) walkRawObjects(a, b []byte, aObj, bObj bool, depth int) {
	start := len(d.buf)
	if aObj {
		d.buf = d.docs[0].ix.SplitObject(a, d.buf)
	}
	mid := len(d.buf)
	if bObj {
		d.buf = d.docs[1].ix.SplitObject(b, d.buf)
	}
	as, bs := d.buf[start:mid], d.buf[mid:]
	as, bs = rawjson.SortMembers(as), rawjson.SortMembers(bs)
	for i, j := 0, 0; i < len(as) || j < len(bs); {
		var key, x, y []byte
		switch c := compareKeys(as, bs, i, j); {
		case c < 0:
			key, x = as[i].Key, as[i].Value
			i++
		case c > 0:
			key, y = bs[j].Key, bs[j].Value
			j++
		default:
			key, x, y = as[i].Key, as[i].Value, bs[j].Value
			i++
			j++
		}
		if identical(x, y, depth+1) {
			continue
		}
		d.path = append(d.path, keyString(key))
		d.walkRaw(x, y, depth+1)
		d.path = d.path[:len(d.path)-1]
	}
	d.buf = d.buf[:start]
}

// compareKeys orders the next members of two sorted member lists, an
// exhausted list last.
func compareKeys(as, bs []member, i, j int) int {
	switch {
	case j == len(bs):
		return -1
	case i == len(as):
		return 1
	}
	return bytes.Compare(as[i].Key, bs[j].Key)
}

// walkRawLists compares two lists index by index.
func (d *differ) walkRawLists(a, b []byte, aList, bList bool, depth int) {
	start := len(d.buf)
	if aList {
		d.buf = d.docs[0].ix.SplitArray(a, d.buf)
	}
	mid := len(d.buf)
	if bList {
		d.buf = d.docs[1].ix.SplitArray(b, d.buf)
	}
	as, bs := d.buf[start:mid], d.buf[mid:]
	for k := 0; k < max(len(as), len(bs)); k++ {
		var x, y []byte
		if k < len(as) {
			x = as[k].Value
		}
		if k < len(bs) {
			y = bs[k].Value
		}
		if identical(x, y, depth+1) {
			continue
		}
		d.path = append(d.path, strconv.Itoa(k))
		d.walkRaw(x, y, depth+1)
		d.path = d.path[:len(d.path)-1]
	}
	d.buf = d.buf[:start]
}

// keyString converts a key for the path, without allocating for the keys
// that make up the paths of most objects.
func keyString(k []byte) string {
	switch string(k) {
	case "metadata":
		return "metadata"
	case "spec":
		return "spec"
	case "status":
		return "status"
	case "template":
		return "template"
	case "containers":
		return "containers"
	case "labels":
		return "labels"
	case "annotations":
		return "annotations"
	case "managedFields":
		return "managedFields"
	case "resourceVersion":
		return "resourceVersion"
	case "generation":
		return "generation"
	case "image":
		return "image"
	case "replicas":
		return "replicas"
	case "data":
		return "data"
	}
	return string(k)
}
