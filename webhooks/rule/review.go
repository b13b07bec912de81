package rule

import (
	"bytes"

	admissionv1 "k8s.io/api/admission/v1"
	kjson "sigs.k8s.io/json"

	"github.com/stewardhq/steward/webhooks/internal/rawjson"
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
//
// The walk is lazy (rawjson.NewLazy): it checks the members it walks and
// finds where values end, which is all cutObjects needs, and leaves the
// rest to the decoder, which validates what it decodes.
func cutObjects(body []byte) (rest, object, oldObject []byte, ok bool) {
	s := rawjson.NewLazy(body)
	var buf [2][2]int
	cuts := buf[:0] // value ranges to replace, in order
	found := false
	ok = members(&s, func(key rawjson.String) bool {
		if !key.Is("request") || s.Peek() != '{' {
			return s.Value()
		}
		found = true
		return members(&s, func(key rawjson.String) bool {
			v, ok := s.RawValue()
			switch {
			case !ok:
				return false
			case key.Is("object"):
				object = v
			case key.Is("oldObject"):
				oldObject = v
			default:
				return true
			}
			cuts = append(cuts, [2]int{s.Pos() - len(v), s.Pos()})
			return true
		})
	})
	if !ok || !found || !s.End() {
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

// members walks the object at s's position, calling each with a member's
// key when s is at its value, which each must pass. An escaped key stops
// the walk: it might spell a member that matters, and only the decoder
// can say.
func members(s *rawjson.Scanner, each func(key rawjson.String) bool) bool {
	if !s.OpenObject() {
		return false
	}
	for first := true; ; first = false {
		key, end, ok := s.Member(first)
		switch {
		case !ok || key.Escaped():
			return false
		case end:
			return true
		case !each(key):
			return false
		}
	}
}
