package serving

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	kjson "sigs.k8s.io/json"
)

var reviewSeeds = []string{
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"UPDATE","object":{"metadata":{"name":"a\"}{","labels":{"x":"[\\"]"}},"spec":[1,{"a":[]}]},"oldObject":{"metadata":{"name":"b"}},"options":null}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","object":null,"oldObject":{"a":"\\\\"}}}`,
	`{"request":{"object":{"a":1},"object":{"b":2}},"request":{"oldObject":[1,2]}}`,
	` { "kind" : "AdmissionReview" , "request" : { "uid" : "x" , "object" : { "a" : true } , "dryRun" : false } } `,
	`{"request":null}`,
	`{"request":{"obj\u0065ct":{"a":1}}}`,
	`{"request":{"object":{"a":1}`,
	`{"request":{"object":"text","oldObject":12.5e3}}`,
	`[]`,
	``,
}

// TestDecodeReviewMatchesTheDecoder checks the shortcut against a full
// decode of the same body, for the shapes the API server sends and some
// it never would.
func TestDecodeReviewMatchesTheDecoder(t *testing.T) {
	for _, body := range reviewSeeds {
		checkDecodeReview(t, []byte(body))
	}
}

// FuzzDecodeReview: wherever the full decode of a body succeeds, the
// shortcut must succeed with the same review; it must never panic.
func FuzzDecodeReview(f *testing.F) {
	for _, s := range reviewSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDecodeReview)
}

func checkDecodeReview(t *testing.T, body []byte) {
	var want, got admissionv1.AdmissionReview
	wantErr := kjson.UnmarshalCaseSensitivePreserveInts(body, &want)
	gotErr := decodeReview(body, &got)
	if wantErr != nil {
		return // the shortcut leaves the objects unvalidated: it may succeed
	}
	if gotErr != nil {
		t.Fatalf("%s: decoded in full, but the shortcut failed: %v", body, gotErr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%s: shortcut differs from the full decode (-full +shortcut):\n%s", body, diff)
	}
}
