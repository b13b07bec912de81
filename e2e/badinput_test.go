package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/rule"
)

// maxRequestBody is controller-runtime's limit on an AdmissionReview body
// (two objects of at most 3 MiB each, plus the rest of the request).
const maxRequestBody = 7 * 1024 * 1024

// servedWebhook is one webhook path Steward serves, from the rule list.
type servedWebhook struct {
	rule.Webhook
	mutating bool
}

// failsOpen says whether Steward answers an internal error on this webhook
// with an allow (mutating rules and failurePolicy Ignore), as the API
// server would if Steward did not answer at all.
func (w servedWebhook) failsOpen() bool {
	return w.mutating || w.FailurePolicy == admissionregistrationv1.Ignore
}

func servedWebhooks() []servedWebhook {
	var out []servedWebhook
	for _, c := range webhooks.Rules(config.Defaults(webhooks.Sections())) {
		spec := c.Rule.Spec()
		for _, wh := range spec.Webhooks {
			out = append(out, servedWebhook{Webhook: wh, mutating: spec.Type == rule.Mutating})
		}
	}
	return out
}

// TestBadInputGetsAClearAnswerOnEveryPath sends Steward's webhook server,
// directly and at every path it serves, what the API server never sends:
// malformed JSON, the wrong Content-Type, an empty body, an AdmissionReview
// without a request, requests without their objects, objects of kinds the
// webhook does not register for, objects that are not JSON objects, a body
// over the size limit. Each must get a well-formed answer: HTTP 200 with
// allowed=false and a message, or (where the webhook fails open, as the API
// server would fail it open) an allow that carries a warning saying Steward
// could not check the request. Nothing may panic, and Steward stays ready.
func TestBadInputGetsAClearAnswerOnEveryPath(t *testing.T) {
	env.LogOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, c := directToSteward(t)

	validReview := func(op admissionv1.Operation, kind metav1.GroupVersionKind, resource metav1.GroupVersionResource, obj, old []byte) []byte {
		return reviewJSON(t, janeRequest(op, kind, resource, "default", "target", obj, old))
	}
	widget := metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgets := metav1.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	labelled := []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"target","namespace":"default","labels":{"` + fleetHashLabel + `":"x","crossplane.io/composite":"x"}},"spec":{"a":1}}`)

	type input struct {
		contentType string
		body        []byte
		method      string
		// malformed inputs are not admission requests at all: the answer
		// must say so (a refusal, or on a webhook that fails open, an
		// allow whose warning says Steward could not check it). Other
		// inputs are requests a rule may find are none of its business.
		malformed bool
	}
	cases := map[string]input{
		"MalformedJSON":           {"application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{`), "", true},
		"WrongContentType":        {"text/plain", validReview(admissionv1.Create, widget, widgets, labelled, nil), "", true},
		"NoContentType":           {"", validReview(admissionv1.Create, widget, widgets, labelled, nil), "", true},
		"EmptyBody":               {"application/json", nil, "", true},
		"GetWithoutBody":          {"application/json", nil, http.MethodGet, true},
		"NotAnAdmissionReview":    {"application/json", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}}`), "", true},
		"ReviewWithoutRequest":    {"application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), "", true},
		"ReviewWithNullRequest":   {"application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`), "", true},
		"RequestWithoutUID":       {"application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE","kind":{"group":"","version":"v1","kind":"ConfigMap"}}}`), "", true},
		"OverTheSizeLimit":        {"application/json", append(validReview(admissionv1.Create, widget, widgets, labelled, nil), bytes.Repeat([]byte(" "), maxRequestBody)...), "", true},
		"CreateWithoutObject":     {"application/json", validReview(admissionv1.Create, widget, widgets, nil, nil), "", false},
		"UpdateWithoutOldObject":  {"application/json", validReview(admissionv1.Update, widget, widgets, labelled, nil), "", false},
		"UpdateWithoutObject":     {"application/json", validReview(admissionv1.Update, widget, widgets, nil, labelled), "", false},
		"DeleteWithoutOldObject":  {"application/json", validReview(admissionv1.Delete, widget, widgets, nil, nil), "", false},
		"UnexpectedKind":          {"application/json", validReview(admissionv1.Update, widget, widgets, labelled, labelled), "", false},
		"ObjectIsAnArray":         {"application/json", validReview(admissionv1.Update, widget, widgets, []byte(`[1,2,3]`), labelled), "", false},
		"ObjectIsAString":         {"application/json", validReview(admissionv1.Create, widget, widgets, []byte(`"object"`), nil), "", false},
		"MetadataOfTheWrongTypes": {"application/json", validReview(admissionv1.Update, widget, widgets, []byte(`{"metadata":{"labels":"x","annotations":[1],"name":7}}`), []byte(`{"metadata":"x","spec":null}`)), "", false},
		"UnknownOperation":        {"application/json", validReview("PATCH", widget, widgets, labelled, labelled), "", false},
	}

	for _, wh := range servedWebhooks() {
		t.Run(strings.TrimPrefix(wh.Path, "/"), func(t *testing.T) {
			for name, in := range cases {
				t.Run(name, func(t *testing.T) {
					method := in.method
					if method == "" {
						method = http.MethodPost
					}
					req, err := http.NewRequestWithContext(ctx, method, s.URL(wh.Path), bytes.NewReader(in.body))
					if err != nil {
						t.Fatal(err)
					}
					if in.contentType != "" {
						req.Header.Set("Content-Type", in.contentType)
					}
					resp, err := c.Do(req)
					if err != nil {
						t.Fatalf("no answer (a crash or a dropped connection): %v", err)
					}
					defer resp.Body.Close()
					var review admissionv1.AdmissionReview
					if err := json.NewDecoder(resp.Body).Decode(&review); err != nil {
						t.Fatalf("HTTP %d, body is not an AdmissionReview: %v", resp.StatusCode, err)
					}
					checkClearAnswer(t, wh, in.malformed, resp.StatusCode, review)
				})
			}
		})
	}
	t.Run("UnknownPath", func(t *testing.T) {
		res, err := postReview(ctx, c, s.URL("/validate/no-such-rule"), "application/json", bytes.NewReader(validReview(admissionv1.Create, widget, widgets, labelled, nil)))
		if err != nil {
			t.Fatal(err)
		}
		if res.status != http.StatusNotFound {
			t.Errorf("an unknown path answered %s, want 404", res)
		}
	})
	if code, body, err := getStatus(s.HealthURL("/readyz")); err != nil || code != http.StatusOK {
		t.Errorf("after the bad input, /readyz: %d %s %v", code, body, err)
	}
}

// checkClearAnswer accepts, for malformed input, an explicit refusal with a
// message or, on a webhook that fails open, an allow whose warning says
// Steward could not check the request: a silent allow is not an answer to
// input that is not an admission request. A well-formed request a rule
// finds is none of its business may be allowed; a refusal always carries
// a message.
func checkClearAnswer(t *testing.T, wh servedWebhook, malformed bool, status int, review admissionv1.AdmissionReview) {
	t.Helper()
	if status != http.StatusOK && (status < 400 || status >= 500) {
		t.Fatalf("HTTP %d, want 200 with a verdict or a 4xx", status)
	}
	r := review.Response
	if r == nil {
		t.Fatalf("HTTP %d with an AdmissionReview without a response", status)
	}
	switch {
	case !r.Allowed:
		if r.Result == nil || r.Result.Message == "" {
			t.Errorf("refused without a message: %+v", r)
		}
	case !malformed:
		if r.Result != nil && r.Result.Code >= 400 {
			t.Errorf("allowed with error code %d: %+v", r.Result.Code, r.Result)
		}
	case !wh.failsOpen():
		t.Errorf("malformed input ALLOWED by a webhook that fails closed: %+v", r)
	case !strings.Contains(strings.Join(r.Warnings, "\n"), "could not check"):
		t.Errorf("malformed input allowed without a warning saying Steward could not check it: %+v", r)
	}
}

// TestBadInputNeverTurnsADenialIntoAnAllow takes one write fleetguard must
// refuse (a person changing a Fleet-managed object) and sends it directly
// in every damaged or extreme form: without its objects, in the v1beta1
// format, with a huge label map, deeply nested, or just under and just over
// the size limit. Each must still be refused (failurePolicy Fail: an error
// is a refusal), and the ones Steward can read must get fleetguard's own
// denial.
func TestBadInputNeverTurnsADenialIntoAnAllow(t *testing.T) {
	env.LogOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, c := directToSteward(t)

	object := func(data string, extraLabels map[string]string, spec any, annotation string) []byte {
		labels := map[string]string{fleetHashLabel: "0123456789abcdef"}
		for k, v := range extraLabels {
			labels[k] = v
		}
		annotations := map[string]string{fleetIDAnnot: "default-web"}
		if annotation != "" {
			annotations["example.com/blob"] = annotation
		}
		o := map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "web", "namespace": "default", "labels": labels, "annotations": annotations},
			"data":     map[string]string{"k": data},
		}
		if spec != nil {
			o["spec"] = spec
		}
		return mustJSON(t, o)
	}
	request := func(op admissionv1.Operation, obj, old []byte) admissionv1.AdmissionRequest {
		return janeRequest(op, configMapKind, configMaps, "default", "web", obj, old)
	}
	hugeLabels := map[string]string{}
	for i := range 20000 {
		hugeLabels[fmt.Sprintf("example.com/label-%05d", i)] = strings.Repeat("v", 40)
	}
	nest := func(depth int, leaf any) any {
		v := leaf
		for range depth {
			v = map[string]any{"n": v}
		}
		return v
	}
	deepJSON := func(depth int) []byte {
		return []byte(strings.Repeat(`{"n":`, depth) + "1" + strings.Repeat("}", depth))
	}
	// Two objects of blobSize bytes each, plus the rest of the request.
	underBlob := (maxRequestBody - 64*1024) / 2
	overBlob := maxRequestBody/2 + 1024

	tests := map[string]struct {
		reason string
		body   []byte
		// fleetguard says the request must get fleetguard's denial, not
		// only a refusal.
		fleetguard bool
		apiVersion string
	}{
		"Baseline": {
			reason:     "a hand edit of a Fleet-managed object is denied",
			body:       reviewJSON(t, request(admissionv1.Update, object("edit", nil, nil, ""), object("v", nil, nil, ""))),
			fleetguard: true,
		},
		"V1beta1Review": {
			reason:     "an AdmissionReview v1beta1 gets the same verdict, in v1beta1",
			body:       bytes.Replace(reviewJSON(t, request(admissionv1.Update, object("edit", nil, nil, ""), object("v", nil, nil, ""))), []byte(`admission.k8s.io/v1"`), []byte(`admission.k8s.io/v1beta1"`), 1),
			fleetguard: true,
			apiVersion: "admission.k8s.io/v1beta1",
		},
		"UpdateWithoutOldObject": {
			reason: "without the stored object the owner cannot be checked: refuse",
			body:   reviewJSON(t, request(admissionv1.Update, object("edit", nil, nil, ""), nil)),
		},
		"UpdateWithoutObject": {
			reason: "without the new object the change cannot be checked: refuse",
			body:   reviewJSON(t, request(admissionv1.Update, nil, object("v", nil, nil, ""))),
		},
		"DeleteWithoutOldObject": {
			reason: "a delete without the stored object cannot be checked: refuse",
			body:   reviewJSON(t, request(admissionv1.Delete, nil, nil)),
		},
		"ObjectIsNotAnObject": {
			reason: "a new object that is not a JSON object cannot be compared: refuse",
			body:   reviewJSON(t, request(admissionv1.Update, []byte(`["edit"]`), object("v", nil, nil, ""))),
		},
		"HugeLabelMap": {
			reason:     "20,000 labels do not hide the change",
			body:       reviewJSON(t, request(admissionv1.Update, object("edit", hugeLabels, nil, ""), object("v", hugeLabels, nil, ""))),
			fleetguard: true,
		},
		"DeeplyNestedChange": {
			reason:     "a change 2,000 levels down is still a change",
			body:       reviewJSON(t, request(admissionv1.Update, object("v", nil, nest(2000, "edit"), ""), object("v", nil, nest(2000, "v"), ""))),
			fleetguard: true,
		},
		"NestedBeyondTheDecoder": {
			reason: "an object nested deeper than any decoder reads is refused, not waved through",
			body:   []byte(strings.Replace(string(reviewJSON(t, request(admissionv1.Update, []byte(`{"placeholder":0}`), object("v", nil, nil, "")))), `{"placeholder":0}`, string(deepJSON(200000)), 1)),
		},
		"JustUnderTheSizeLimit": {
			reason:     "the largest request the API server can send gets a real verdict",
			body:       reviewJSON(t, request(admissionv1.Update, object("edit", nil, nil, strings.Repeat("a", underBlob)), object("v", nil, nil, strings.Repeat("a", underBlob)))),
			fleetguard: true,
		},
		"OverTheSizeLimit": {
			reason: "a body over the limit is refused unread",
			body:   reviewJSON(t, request(admissionv1.Update, object("edit", nil, nil, strings.Repeat("a", overBlob)), object("v", nil, nil, strings.Repeat("a", overBlob)))),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if name == "JustUnderTheSizeLimit" && len(tc.body) >= maxRequestBody {
				t.Fatalf("the body is %d bytes, not under the limit %d", len(tc.body), maxRequestBody)
			}
			if name == "OverTheSizeLimit" && len(tc.body) <= maxRequestBody {
				t.Fatalf("the body is %d bytes, not over the limit %d", len(tc.body), maxRequestBody)
			}
			res, err := postReview(ctx, c, s.URL("/validate/fleetguard"), "application/json", bytes.NewReader(tc.body))
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if res.status != http.StatusOK || res.review.Response == nil {
				t.Fatalf("%s: %s", tc.reason, res)
			}
			r := res.review.Response
			if r.Allowed {
				t.Fatalf("%s: ALLOWED: %s", tc.reason, res)
			}
			msg := ""
			if r.Result != nil {
				msg = r.Result.Message
			}
			if msg == "" {
				t.Errorf("%s: refused without a message: %s", tc.reason, res)
			}
			if tc.fleetguard && !strings.HasPrefix(msg, "fleetguard: ConfigMap default/web is managed by Fleet") {
				t.Errorf("%s: want fleetguard's own denial, got %q", tc.reason, msg)
			}
			want := tc.apiVersion
			if want == "" {
				want = "admission.k8s.io/v1"
			}
			// An answer to a request Steward could not read has no
			// apiVersion to echo.
			if tc.fleetguard && res.apiVersion != want {
				t.Errorf("%s: answered in %q, want %q", tc.reason, res.apiVersion, want)
			}
			t.Logf("%d bytes: %.160s", len(tc.body), msg)
		})
	}
}
