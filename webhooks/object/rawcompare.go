package object

import (
	"bytes"
	"slices"
	"strconv"
)

// equalJSON reports whether the values a and b, texts validJSON accepted (or
// empty, which counts as null: a missing value), decode to equal values,
// as reflect.DeepEqual compares what encoding/json decodes with
// UseNumber: objects with the same keys, the last of repeated keys
// winning, and equal values under them; arrays of equal elements; strings
// equal once unescaped; numbers written the same (compared as their text,
// so integers beyond float64 precision compare exactly); literals alike.
// Key order, escaping and white space do not matter.
//
// xa and xb are the Indexes a and b belong to, if any: through them each
// level is split reading only its own members, so the comparison reads
// each byte about once however deep the values nest. Its recursion is
// bounded by the nesting validJSON accepted.
//
// buf is room for the members it splits, which it returns, grown if it
// had to, so a caller can lend the same buffer to every comparison.
func equalJSON(xa *rawIndex, a []byte, xb *rawIndex, b []byte, buf []rawMember) (bool, []rawMember) {
	e := equality{xa: xa, xb: xb, buf: buf[:0]}
	return e.equal(trimSpace(a), trimSpace(b)), e.buf
}

// equality holds the members of the objects and arrays being compared, as
// a stack: each level appends its own and drops them when done.
type equality struct {
	xa, xb *rawIndex
	buf    []rawMember
}

// equal compares two values. It compares the text of scalars only: a
// shortcut for identical containers would compare the text below them
// again at every level, so that deeply nested text would be read once per
// level instead of once.
func (e *equality) equal(a, b []byte) bool {
	ka, kb := kindOf(a), kindOf(b)
	switch {
	case ka != kb:
		return false
	case ka == 'n':
		return true // empty and null
	case ka == '"':
		return bytes.Equal(a, b) || bytes.Equal(unquote(a), unquote(b))
	case ka == 's':
		return bytes.Equal(a, b) // numbers as written, and literals
	}
	start := len(e.buf)
	defer func() { e.buf = e.buf[:start] }()
	if ka == '[' {
		e.buf = e.xa.arrayElements(a, e.buf)
		mid := len(e.buf)
		e.buf = e.xb.arrayElements(b, e.buf)
		return e.equalMembers(e.buf[start:mid], e.buf[mid:], false)
	}
	e.buf = e.xa.objectMembers(a, e.buf)
	mid := len(e.buf)
	e.buf = e.xb.objectMembers(b, e.buf)
	return e.equalMembers(sortMembers(e.buf[start:mid]), sortMembers(e.buf[mid:]), true)
}

// equalMembers compares the members of two objects, sorted by key, or
// the elements of two arrays. Deeper levels append to e.buf past as and
// bs, so the slices stay valid even when e.buf moves.
func (e *equality) equalMembers(as, bs []rawMember, keyed bool) bool {
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if keyed && !bytes.Equal(as[i].Key, bs[i].Key) {
			return false
		}
		if !e.equal(as[i].Value, bs[i].Value) {
			return false
		}
	}
	return true
}

// kindOf classifies a value by its first byte: 'n' for null or none, '{',
// '[', '"', and 's' for the other scalars.
func kindOf(v []byte) byte {
	if len(v) == 0 {
		return 'n'
	}
	switch c := v[0]; c {
	case 'n', '{', '[', '"':
		return c
	}
	return 's'
}

// sortMembers sorts an object's members by key and keeps only the last of
// each key, as decoding into a map does. It returns the members kept, at
// the front of ms.
func sortMembers(ms []rawMember) []rawMember {
	if len(ms) < 2 {
		return ms
	}
	byKey := func(x, y rawMember) int { return bytes.Compare(x.Key, y.Key) }
	if !slices.IsSortedFunc(ms, byKey) {
		slices.SortStableFunc(ms, byKey)
	}
	n := 0
	for k := range ms {
		if k+1 < len(ms) && bytes.Equal(ms[k].Key, ms[k+1].Key) {
			continue // a later member has the same key
		}
		ms[n] = ms[k]
		n++
	}
	return ms[:n]
}

// maxDiffDepth bounds how deep Diff descends. Below it, two subtrees are
// compared whole and a difference is reported at the deepest path
// reached, so arbitrarily nested input cannot make the paths, or the
// recursion, arbitrarily long.
const maxDiffDepth = 64

// differ walks two objects. views are the old and new object, and buf
// holds the members of the objects and lists in them it is comparing, as
// a stack: each level appends its own and drops them when done.
type differ struct {
	skip  []Pointer
	limit int
	out   Changes
	path  Pointer
	views [2]*View
	buf   []rawMember
}

func (d *differ) report() {
	d.out.Total++
	if len(d.out.First) < d.limit {
		d.out.First = append(d.out.First, d.path.String())
	}
}

// skipped reports whether the current path is at or under a skipped one.
func (d *differ) skipped() bool {
	for _, s := range d.skip {
		if d.path.HasPrefix(s) {
			return true
		}
	}
	return false
}

// walk reports the paths under the current one at which a and b, raw
// values of the old and new object, differ; either is nil when missing.
// An added or removed subtree is reported leaf by leaf, counting a
// missing value as an empty object or list: every path can be pasted
// into ignoredFields as it is, and ignored paths inside it still apply.
func (d *differ) walk(a, b []byte, depth int) {
	if identical(a, b, depth) || d.skipped() || (rawEmpty(a) && rawEmpty(b)) {
		return
	}
	if depth >= maxDiffDepth {
		if !d.same(a, b) {
			d.report()
		}
		return
	}
	ka, kb := kindOf(a), kindOf(b)
	switch {
	case (ka == '{' || ka == 'n') && (kb == '{' || kb == 'n'):
		d.walkObjects(a, b, ka == '{', kb == '{', depth)
	case (ka == '[' || ka == 'n') && (kb == '[' || kb == 'n'):
		d.walkLists(a, b, ka == '[', kb == '[', depth)
	case scalar(ka) && scalar(kb) && d.same(a, b):
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
	switch kindOf(v) {
	case 'n':
		return true
	case '{', '[':
		return skipSpace(v, 1) == len(v)-1
	}
	return false
}

// scalar reports whether a kind kindOf returned is a string, number or
// boolean.
func scalar(k byte) bool { return k == '"' || k == 's' }

// same reports whether a and b, raw values of the old and new object,
// decode to equal values; unlike walk, it counts no empty value equal
// to another of a different type.
func (d *differ) same(a, b []byte) bool {
	// The comparison splits into d.buf's room past the levels walked,
	// which the walk reuses once it returns.
	eq, buf := equalJSON(&d.views[0].ix, a, &d.views[1].ix, b, d.buf[len(d.buf):])
	if cap(buf) > cap(d.buf)-len(d.buf) {
		// It outgrew the room: keep the larger buffer for the walk.
		d.buf = append(buf[:0], d.buf...)
	}
	return eq
}

// walkObjects compares two objects key by key, in key order. Members
// split here are appended to d.buf and dropped on return; deeper levels
// only append past them, so the slices below stay valid even when d.buf
// moves.
func (d *differ) walkObjects(a, b []byte, aObj, bObj bool, depth int) {
	start := len(d.buf)
	if aObj {
		d.buf = d.views[0].ix.objectMembers(a, d.buf)
	}
	mid := len(d.buf)
	if bObj {
		d.buf = d.views[1].ix.objectMembers(b, d.buf)
	}
	as, bs := d.buf[start:mid], d.buf[mid:]
	as, bs = sortMembers(as), sortMembers(bs)
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
		d.walk(x, y, depth+1)
		d.path = d.path[:len(d.path)-1]
	}
	d.buf = d.buf[:start]
}

// compareKeys orders the next members of two sorted member lists, an
// exhausted list last.
func compareKeys(as, bs []rawMember, i, j int) int {
	switch {
	case j == len(bs):
		return -1
	case i == len(as):
		return 1
	}
	return bytes.Compare(as[i].Key, bs[j].Key)
}

// walkLists compares two lists index by index.
func (d *differ) walkLists(a, b []byte, aList, bList bool, depth int) {
	start := len(d.buf)
	if aList {
		d.buf = d.views[0].ix.arrayElements(a, d.buf)
	}
	mid := len(d.buf)
	if bList {
		d.buf = d.views[1].ix.arrayElements(b, d.buf)
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
		d.walk(x, y, depth+1)
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
