package rule

import (
	"bytes"

	admissionv1 "k8s.io/api/admission/v1"
	kjson "sigs.k8s.io/json"
)

// decodeReview decodes an AdmissionReview. The two objects are most of
// its bytes, and a rule reads them itself, so they are only located here:
// the rest of the review, with both objects cut out, goes through the JSON
// decoder, and the objects' bytes are handed over as they are. A JSON
// decoder scans every byte twice (once to validate, once to decode) and
// this skips each object in one quick pass, which roughly halves the cost
// of a call. Whenever the body is not shaped as expected (no request
// object, escaped keys, a value that does not end), it falls back to
// decoding the whole body, so the result never depends on the shortcut.
func decodeReview(body []byte, review *admissionv1.AdmissionReview) error {
	if rest, object, oldObject, ok := cutObjects(body); ok {
		if err := kjson.UnmarshalCaseSensitivePreserveInts(rest, review); err != nil {
			return err
		}
		if review.Request != nil {
			review.Request.Object.Raw = rawValue(object)
			review.Request.OldObject.Raw = rawValue(oldObject)
		}
		return nil
	}
	return kjson.UnmarshalCaseSensitivePreserveInts(body, review)
}

// rawValue copies an object's bytes, as RawExtension does; null and
// absent are no object.
func rawValue(b []byte) []byte {
	if b == nil || bytes.Equal(b, []byte("null")) {
		return nil
	}
	return bytes.Clone(b)
}

// cutObjects finds the values of request.object and request.oldObject in
// a review and returns the body with each replaced by null. ok is false
// when the body is not a JSON object with a request object whose members
// can be walked.
func cutObjects(body []byte) (rest, object, oldObject []byte, ok bool) {
	s := scanner{b: body}
	var cuts [][2]int // value ranges to replace, in order
	found := false
	okWalk := s.members(func(key []byte, start int) bool {
		if string(key) != "request" || s.peek() != '{' {
			return s.skipValue()
		}
		found = true
		return s.members(func(key []byte, start int) bool {
			if !s.skipValue() {
				return false
			}
			switch string(key) {
			case "object":
				object = body[start:s.i]
			case "oldObject":
				oldObject = body[start:s.i]
			default:
				return true
			}
			cuts = append(cuts, [2]int{start, s.i})
			return true
		})
	})
	if !okWalk || !found || s.ws() != len(body) {
		return nil, nil, nil, false
	}
	if len(cuts) == 0 {
		return body, nil, nil, true
	}
	out := make([]byte, 0, len(body)-len(object)-len(oldObject)+8)
	at := 0
	for _, c := range cuts {
		out = append(out, body[at:c[0]]...)
		out = append(out, "null"...)
		at = c[1]
	}
	return append(out, body[at:]...), object, oldObject, true
}

// scanner walks JSON without validating it: it finds where values end,
// which is all cutObjects needs; the decoder validates what it decodes.
type scanner struct {
	b []byte
	i int
}

// ws skips white space and returns the position reached.
func (s *scanner) ws() int {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\n' || s.b[s.i] == '\r' || s.b[s.i] == '\t') {
		s.i++
	}
	return s.i
}

// peek returns the next byte after white space, or 0 at the end.
func (s *scanner) peek() byte {
	if s.ws() < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// members walks the object at the current position, calling each with a
// member's key (as written, unescaped keys only) and the position of its
// value, which each must skip.
func (s *scanner) members(each func(key []byte, start int) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		from := s.i + 1
		if !s.skipString() {
			return false
		}
		key := s.b[from : s.i-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			// An escaped key might spell a member that matters; only
			// the decoder can say.
			return false
		}
		if s.peek() != ':' {
			return false
		}
		s.i++
		if !each(key, s.ws()) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// skipString moves past the string starting at the current quote.
func (s *scanner) skipString() bool {
	i := s.i + 1
	for {
		j := bytes.IndexByte(s.b[i:], '"')
		if j < 0 {
			return false
		}
		i += j
		backslashes := 0
		for k := i - 1; k > s.i && s.b[k] == '\\'; k-- {
			backslashes++
		}
		i++
		if backslashes%2 == 0 {
			s.i = i
			return true
		}
	}
}

// skipValue moves past the value at the current position.
func (s *scanner) skipValue() bool {
	switch s.peek() {
	case 0:
		return false
	case '"':
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	default:
		// A number, true, false or null: up to the next delimiter.
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\n', '\r', '\t':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}
