package object

import (
	"bytes"
	"slices"
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
