package object

import (
	"bytes"
	"math"
	"slices"
)

// A rawIndex is a text validJSON accepted, with where each of its non-empty
// objects and arrays starts and ends, recorded while validating. Splitting
// a value lazily reads all of it, the values nested in its members
// included, so splitting an object and then its members level by level
// reads the deepest bytes once per level; through a rawIndex, a split reads
// only the object's own keys and scalars and passes each nested container
// in one step, so validating and then splitting any part of the text
// reads each byte about once.
//
// The zero rawIndex holds no text; its splits are the lazy ones. Its text
// must not change while it is in use, and validJSON reuses its memory, which
// copies of it share.
type rawIndex struct {
	data []byte
	// spans are the non-empty containers in the order they open, which
	// is the order of their starts.
	spans []span
	// open is, while validJSON runs, the span of the innermost open
	// container (-1 at the top level).
	open int32
}

// A span is one container of a rawIndex: data[start:end] is its text, and
// spans[next] the first container after it, past the ones nested in it.
// While the container is open, next holds the span of the container
// around it.
type span struct {
	start, end, next int32
}

// validJSON validates data as validJSON does and, when it is valid, makes x its
// rawIndex, reusing x's memory; otherwise x indexes nothing. A text larger
// than 2 GiB is validated but not indexed.
func (x *rawIndex) validJSON(data []byte, maxDepth int) bool {
	*x = rawIndex{spans: x.spans[:0], open: -1}
	if len(data) > math.MaxInt32 {
		return validJSON(data, maxDepth)
	}
	if cap(x.spans) == 0 {
		// Kubernetes objects hold a non-empty container every 70 bytes
		// or so: room for one every 64 spares growing step by step.
		x.spans = make([]span, 0, len(data)/64+8)
	}
	i := skipSpace(data, 0)
	end, ok := validValue(data, i, min(maxDepth, maxNesting), x)
	if !ok || skipSpace(data, end) != len(data) {
		x.spans = x.spans[:0]
		return false
	}
	x.data = data
	return true
}

// opened records the container validValue opened at data[i].
func (x *rawIndex) opened(i int) {
	x.spans = append(x.spans, span{start: int32(i), next: x.open})
	x.open = int32(len(x.spans) - 1)
}

// closed records that the innermost open container ends before data[i].
func (x *rawIndex) closed(i int) {
	s := &x.spans[x.open]
	x.open = s.next
	s.end, s.next = int32(i), int32(len(x.spans))
}

// objectMembers is objectMembers of an object of x's text: the text itself
// less white space, or a value a split of it returned. It finds the same
// members, reading only the object's own; of any other data it is the
// lazy objectMembers.
func (x *rawIndex) objectMembers(v []byte, buf []rawMember) []rawMember {
	return splitObject(v, x.nested(v), buf)
}

// member is the value of the first member of the object v (as for
// objectMembers) whose key is key, reading no member after it.
func (x *rawIndex) member(v []byte, key []byte) ([]byte, bool) {
	n := x.nested(v)
	s := newLazy(v)
	if !s.OpenObject() {
		return nil, false
	}
	for first := true; ; first = false {
		k, end, ok := s.Member(first)
		if end || !ok {
			return nil, false
		}
		start := s.pos
		if !n.value(&s) {
			return nil, false
		}
		if k.Plain() && bytes.Equal(k.Inner(), key) || !k.Plain() && bytes.Equal(k.Bytes(), key) {
			return v[start:s.pos], true
		}
	}
}

// arrayElements is arrayElements of an array of x's text, as objectMembers is.
func (x *rawIndex) arrayElements(v []byte, buf []rawMember) []rawMember {
	return splitArray(v, x.nested(v), buf)
}

// nested returns the containers nested in v, when v is the text of a
// container of x: v must share x's memory, not only its bytes.
func (x *rawIndex) nested(v []byte) nested {
	if x == nil || len(v) == 0 || len(x.spans) == 0 {
		return nested{}
	}
	// v is x.data[off:...]: slicing keeps the end of the memory, so the
	// capacities tell the offset, and the addresses confirm it.
	off := cap(x.data) - cap(v)
	if off < 0 || off >= len(x.data) || &x.data[off] != &v[0] {
		return nested{}
	}
	k, found := slices.BinarySearchFunc(x.spans, off, func(s span, off int) int { return int(s.start) - off })
	if !found || int(x.spans[k].end)-off != len(v) {
		return nested{}
	}
	return nested{spans: x.spans, k: k + 1, stop: int(x.spans[k].next), base: off}
}

// nested are the containers of a rawIndex nested in the container a split
// reads, which starts at base in the rawIndex's text: spans[k] is the next
// one the split meets, spans[stop] the first after the container.
type nested struct {
	spans   []span
	k, stop int
	base    int
}

// value moves s past the value at its position: in one step when it is
// the next nested container, lazily otherwise (an empty container, a
// scalar, or a split without a rawIndex).
func (n *nested) value(s *rawScanner) bool {
	if n.k < n.stop && int(n.spans[n.k].start) == n.base+s.pos {
		sp := n.spans[n.k]
		s.pos, n.k = int(sp.end)-n.base, int(sp.next)
		return true
	}
	return s.Value()
}

// maxNesting is the deepest nesting a strict reading can follow; a larger
// limit asked of validJSON or newStrict counts as maxNesting. It is
// encoding/json's own limit, so a reader asking for maxNesting accepts
// exactly what encoding/json accepts and needs no decoder beside it.
const maxNesting = 10000

// validJSON reports whether data is exactly one JSON value, with nothing but
// white space around it, and with containers (objects and arrays, empty
// ones included) nested at most maxDepth deep. It accepts nothing
// encoding/json rejects, so whatever it accepts decodes.
func validJSON(data []byte, maxDepth int) bool {
	i := skipSpace(data, 0)
	end, ok := validValue(data, i, min(maxDepth, maxNesting), nil)
	return ok && skipSpace(data, end) == len(data)
}

// validValue validates the value that starts at data[i], with containers
// nested at most maxDepth deep, and returns the index after it; when x is
// not nil, it records the non-empty containers in x. It walks
// the containers with a stack of its own rather than by recursion, which
// is about twice as fast.
func validValue(data []byte, i, maxDepth int, x *rawIndex) (int, bool) {
	// objects has bit d set when the open container at depth d is an
	// object, clear when it is an array; object is that bit of the
	// innermost one. The first 1024 levels live on the stack; only text
	// nested deeper, which no Kubernetes object is, makes it grow.
	var inline [1024 / 64]uint64
	objects := inline[:]
	depth, object := uint(0), false
	for {
		// A value starts at i.
		if i >= len(data) {
			return i, false
		}
		switch c := data[i]; c {
		case '{', '[':
			if int(depth) >= maxDepth {
				return i, false
			}
			if int(depth/64) == len(objects) {
				objects = append(objects, 0)
			}
			closing := byte('}')
			if c == '[' {
				closing = ']'
			}
			start := i
			i = skipSpace(data, i+1)
			if i < len(data) && data[i] == closing {
				i++
				break // empty: a complete value
			}
			if x != nil {
				x.opened(start)
			}
			object = c == '{'
			if object {
				objects[depth/64] |= 1 << (depth % 64)
			} else {
				objects[depth/64] &^= 1 << (depth % 64)
			}
			depth++
			if object {
				var ok bool
				if i, ok = scanKey(data, i); !ok {
					return i, false
				}
			}
			continue // the first member or element starts at i
		case '"':
			var ok bool
			if i, _, _, ok = scanString(data, i); !ok {
				return i, false
			}
		case 't':
			if !bytes.HasPrefix(data[i:], []byte("true")) {
				return i, false
			}
			i += 4
		case 'f':
			if !bytes.HasPrefix(data[i:], []byte("false")) {
				return i, false
			}
			i += 5
		case 'n':
			if !bytes.HasPrefix(data[i:], []byte("null")) {
				return i, false
			}
			i += 4
		default:
			var ok bool
			if i, ok = scanNumber(data, i); !ok {
				return i, false
			}
		}
		// A value is complete at i: close the containers that end here,
		// then move to the next member or element.
		for next := false; !next; {
			if depth == 0 {
				return i, true
			}
			i = skipSpace(data, i)
			if i >= len(data) {
				return i, false
			}
			switch data[i] {
			case ',':
				i = skipSpace(data, i+1)
				if object {
					var ok bool
					if i, ok = scanKey(data, i); !ok {
						return i, false
					}
				}
				next = true
			case '}', ']':
				if (data[i] == '}') != object {
					return i, false
				}
				i++
				depth--
				if x != nil {
					x.closed(i)
				}
				if depth > 0 {
					d := depth - 1
					object = objects[d/64]&(1<<(d%64)) != 0
				}
			default:
				return i, false
			}
		}
	}
}

// scanKey validates `"key" :` and the white space after it, returning
// where the member's value starts.
func scanKey(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return i, false
	}
	i, _, _, ok := scanString(data, i)
	if !ok {
		return i, false
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return i, false
	}
	return skipSpace(data, i+1), true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digits returns the index after the decimal digits at data[i], and
// whether there was at least one.
func digits(data []byte, i int) (int, bool) {
	start := i
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	return i, i > start
}

// scanNumber validates the number starting at data[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(data []byte, i int) (int, bool) {
	if i < len(data) && data[i] == '-' {
		i++
	}
	if i >= len(data) || !isDigit(data[i]) {
		return i, false
	}
	if data[i] == '0' {
		i++
	} else {
		i, _ = digits(data, i)
	}
	var ok bool
	if i < len(data) && data[i] == '.' {
		if i, ok = digits(data, i+1); !ok {
			return i, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i, ok = digits(data, i); !ok {
			return i, false
		}
	}
	return i, true
}
