package serving

import (
	"bytes"

	admissionv1 "k8s.io/api/admission/v1"
	kjson "sigs.k8s.io/json"

	"github.com/stewardhq/steward/webhooks/object"
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
	if rest, obj, oldObj, ok := object.CutObjects(body); ok {
		if err := kjson.UnmarshalCaseSensitivePreserveInts(rest, review); err != nil {
			return err
		}
		if review.Request != nil {
			review.Request.Object.Raw = rawValue(obj)
			review.Request.OldObject.Raw = rawValue(oldObj)
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
