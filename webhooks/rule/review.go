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
	if !s.OpenObject() {
		return nil, nil, nil, false
	}
	for first := true; ; first = false {
		key, end, ok := member(&s, first)
		if !ok {
			return nil, nil, nil, false
		}
		if end {
			break
		}
		if !key.Is("request") || s.Peek() != '{' {
			if !s.Value() {
				return nil, nil, nil, false
			}
			continue
		}
		found = true
		s.OpenObject()
		for first := true; ; first = false {
			key, end, ok := member(&s, first)
			if !ok {
				return nil, nil, nil, false
			}
			if end {
				break
			}
			start := s.Pos()
			if !s.Value() {
				return nil, nil, nil, false
			}
			switch {
			case key.Is("object"):
				object = body[start:s.Pos()]
			case key.Is("oldObject"):
				oldObject = body[start:s.Pos()]
			default:
				continue
			}
			cuts = append(cuts, [2]int{start, s.Pos()})
		}
	}
	if !found || !s.End() {
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

// member moves to the next member of the object s is in, as s.Member
// does, and refuses an escaped key: it might spell a member that matters,
// and only the decoder can say.
func member(s *rawjson.Scanner, first bool) (key rawjson.String, end, ok bool) {
	key, end, ok = s.Member(first)
	return key, end, ok && !key.Escaped()
}
