package apimigration

import (
	"bytes"

	"github.com/stewardhq/steward/webhooks/internal/rawjson"
)

// sameSpec reports whether two objects have the same spec, ignoring
// formatting and key order. Flux controllers reconcile when the spec
// changes (the generation moves) or a reconcile annotation changes, so the
// spec is what decides whether a write asks for new work.
func sameSpec(a, b *object) bool {
	if bytes.Equal(a.Spec, b.Spec) {
		return true
	}
	switch compareSpecs(a.Spec, b.Spec) {
	case same:
		return true
	case different:
		return false
	}
	return equalSpecs(a.Spec, b.Spec)
}

// equalSpecs compares two specs, valid JSON or empty, in any form: it
// indexes both (one more pass over each) and compares them member by
// member in key order, so escaped and unsorted keys compare as decoded.
func equalSpecs(a, b []byte) bool {
	var xa, xb rawjson.Index
	if (len(a) > 0 && !xa.Valid(a, maxDepth)) || (len(b) > 0 && !xb.Valid(b, maxDepth)) {
		return false // unreachable: decodeFast validated both
	}
	return rawjson.Equal(&xa, a, &xb, b)
}

// verdict is what a walk over two JSON values concludes.
type verdict int

const (
	same verdict = iota
	different
	// unsure: the walk cannot tell cheaply (escaped or unsorted object
	// keys), and sameSpec indexes both values instead.
	unsure
)

// compareSpecs tells whether two specs, each valid JSON or empty (a missing
// spec), decode to equal values, the way reflect.DeepEqual compares what
// encoding/json decodes with UseNumber: object key order and string escaping do not matter, number
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
	// Specs come from objects decodeFast read, so they are valid JSON
	// already; strict scanners check them again on the way.
	sa, sb := rawjson.NewStrict(a, maxDepth), rawjson.NewStrict(b, maxDepth)
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
func compareValues(a, b *rawjson.Scanner) verdict {
	ta, tb := jsonType(a.Peek()), jsonType(b.Peek())
	if ta != tb {
		if !a.Value() || !b.Value() {
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
		x, okA := a.StringValue()
		y, okB := b.StringValue()
		switch {
		case !okA || !okB:
			return unsure
		case bytes.Equal(x.Raw, y.Raw):
			return same
		case x.Plain() && y.Plain():
			return different
		case x.Text() == y.Text():
			return same
		}
		return different
	}
	// Numbers are compared as their text (json.Number), literals too.
	x, okA := a.RawValue()
	y, okB := b.RawValue()
	if !okA || !okB {
		return unsure
	}
	if bytes.Equal(x, y) {
		return same
	}
	return different
}

// compareArrays compares two arrays element by element.
func compareArrays(a, b *rawjson.Scanner) verdict {
	if !a.OpenArray() || !b.OpenArray() {
		return unsure
	}
	v := same
	for first := true; ; first = false {
		endA, okA := a.Element(first)
		endB, okB := b.Element(first)
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
func rest(s *rawjson.Scanner, ended bool) bool {
	if ended {
		return true
	}
	for {
		if !s.Value() {
			return false
		}
		end, ok := s.Element(false)
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
func compareObjects(a, b *rawjson.Scanner) verdict {
	if !a.OpenObject() || !b.OpenObject() {
		return unsure
	}
	v := same
	var prevA, prevB []byte
	// next reads the next key of one side, checking the order.
	next := func(s *rawjson.Scanner, first bool, prev *[]byte) (key []byte, end, ok bool) {
		k, end, ok := s.Member(first)
		if !ok || end {
			return nil, end, ok
		}
		if !k.Plain() || (*prev != nil && bytes.Compare(k.Inner(), *prev) <= 0) {
			return nil, false, false
		}
		*prev = k.Inner()
		return k.Inner(), false, true
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
			if !a.Value() {
				return unsure
			}
			ka, endA, okA = next(a, false, &prevA)
		default:
			v = different
			if !b.Value() {
				return unsure
			}
			kb, endB, okB = next(b, false, &prevB)
		}
	}
}
