package object

import "bytes"

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
