package apimigration

import "bytes"

// verdict is what a walk over two JSON values concludes.
type verdict int

const (
	same verdict = iota
	different
	// unsure: the walk cannot tell cheaply (escaped or unsorted object
	// keys), and sameSpec decodes both values instead.
	unsure
)

// compareSpecs tells whether two specs, each valid JSON or empty (a missing
// spec), decode to equal values, the way decodeAny and reflect.DeepEqual
// compare them: object key order and string escaping do not matter, number
// text does, duplicate keys resolve to the last. It walks both texts once,
// in step, and allocates only to decode strings that differ and hold
// escapes.
//
// Objects are compared member by member in key order, which needs each
// object's keys strictly increasing: the API server encodes objects from
// maps, with sorted and unique keys, so that is the form it sends. An
// object in any other form, or with keys that are escaped or not ASCII,
// makes the answer unsure.
func compareSpecs(a, b []byte) verdict {
	if len(a) == 0 {
		a = []byte("null")
	}
	if len(b) == 0 {
		b = []byte("null")
	}
	sa, sb := scanner{data: a}, scanner{data: b}
	sa.ws()
	sb.ws()
	return compareValues(&sa, &sb)
}

// jsonType classifies a value by its first byte; true and false share a
// type, as two bools do in Go.
func jsonType(c byte) byte {
	switch c {
	case '{', '[', '"', 'n':
		return c
	case 't', 'f':
		return 't'
	}
	return '0'
}

// compareValues compares the values at both positions and moves past them.
// It stops early, with the positions undefined, only when unsure.
func compareValues(a, b *scanner) verdict {
	ta, tb := jsonType(a.peek()), jsonType(b.peek())
	if ta != tb {
		if !a.value() || !b.value() {
			return unsure
		}
		return different
	}
	switch ta {
	case '{':
		return compareObjects(a, b)
	case '[':
		return compareArrays(a, b)
	case '"':
		x, okA := a.str()
		y, okB := b.str()
		switch {
		case !okA || !okB:
			return unsure
		case bytes.Equal(x.raw, y.raw):
			return same
		case x.plain() && y.plain():
			return different
		case x.decode() == y.decode():
			return same
		}
		return different
	}
	// Numbers are compared as their text (json.Number), literals too.
	startA, startB := a.pos, b.pos
	if !a.value() || !b.value() {
		return unsure
	}
	if bytes.Equal(a.data[startA:a.pos], b.data[startB:b.pos]) {
		return same
	}
	return different
}

// compareArrays compares two arrays element by element.
func compareArrays(a, b *scanner) verdict {
	if !a.open('[') || !b.open('[') {
		return unsure
	}
	v := same
	for first := true; ; first = false {
		endA, okA := a.element(first)
		endB, okB := b.element(first)
		if !okA || !okB {
			return unsure
		}
		switch {
		case endA && endB:
			return v
		case endA || endB:
			// Different lengths; scan what is left of the longer one.
			if !rest(a, endA) || !rest(b, endB) {
				return unsure
			}
			return different
		}
		switch compareValues(a, b) {
		case unsure:
			return unsure
		case different:
			v = different
		}
	}
}

// rest scans the remaining values of an array once its next value is due,
// unless it has already ended.
func rest(s *scanner, ended bool) bool {
	if ended {
		return true
	}
	for {
		if !s.value() {
			return false
		}
		end, ok := s.element(false)
		if !ok {
			return false
		}
		if end {
			return true
		}
	}
}

// compareObjects compares two objects whose keys are sorted, merging their
// members by key.
func compareObjects(a, b *scanner) verdict {
	if !a.open('{') || !b.open('{') {
		return unsure
	}
	v := same
	var prevA, prevB []byte
	// next reads the next key of one side, checking the order.
	next := func(s *scanner, first bool, prev *[]byte) (key []byte, end, ok bool) {
		k, end, ok := s.member(first)
		if !ok || end {
			return nil, end, ok
		}
		if !k.plain() || (*prev != nil && bytes.Compare(k.inner(), *prev) <= 0) {
			return nil, false, false
		}
		*prev = k.inner()
		return k.inner(), false, true
	}
	ka, endA, okA := next(a, true, &prevA)
	kb, endB, okB := next(b, true, &prevB)
	for {
		if !okA || !okB {
			return unsure
		}
		var c int
		switch {
		case endA && endB:
			return v
		case endA:
			c = 1
		case endB:
			c = -1
		default:
			c = bytes.Compare(ka, kb)
		}
		switch {
		case c == 0:
			switch compareValues(a, b) {
			case unsure:
				return unsure
			case different:
				v = different
			}
			ka, endA, okA = next(a, false, &prevA)
			kb, endB, okB = next(b, false, &prevB)
		case c < 0:
			// The key is in a only.
			v = different
			if !a.value() {
				return unsure
			}
			ka, endA, okA = next(a, false, &prevA)
		default:
			v = different
			if !b.value() {
				return unsure
			}
			kb, endB, okB = next(b, false, &prevB)
		}
	}
}
