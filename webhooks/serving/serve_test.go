package serving_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/serving"
)

// answer is what a caller of Serve can see of its answer.
type answer struct {
	Status     int
	APIVersion string
	UID        string
	Allowed    bool
	Code       int32
	Message    string
	PatchType  string
	Patch      string
}

// serve posts body to h and decodes the AdmissionReview it answers with.
func serve(t testing.TB, h http.Handler, contentType string, body []byte) answer {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/validate/guard", bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if got, want := w.Header().Get("Content-Length"), strconv.Itoa(w.Body.Len()); got != want {
		t.Errorf("Content-Length %s for a body of %s bytes", got, want)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &review); err != nil {
		t.Fatalf("HTTP %d, the answer is not an AdmissionReview: %v\n%s", w.Code, err, w.Body)
	}
	if review.Response == nil {
		t.Fatalf("HTTP %d, an AdmissionReview without a response: %s", w.Code, w.Body)
	}
	a := answer{Status: w.Code, APIVersion: review.APIVersion, UID: string(review.Response.UID), Allowed: review.Response.Allowed, Patch: string(review.Response.Patch)}
	if review.Response.Result != nil {
		a.Code, a.Message = review.Response.Result.Code, review.Response.Result.Message
	}
	if review.Response.PatchType != nil {
		a.PatchType = string(*review.Response.PatchType)
	}
	return a
}

func reviewOf(apiVersion string, req admission.Request) []byte {
	body, err := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": "AdmissionReview", "request": req.AdmissionRequest})
	if err != nil {
		panic(err)
	}
	return body
}

func TestServeAnswersEveryBodyWithAReview(t *testing.T) {
	req := admissiontest.Create(deployments, "Deployment", map[string]any{"metadata": map[string]any{"name": "web", "namespace": "default"}}).Build()
	uid := string(req.UID)
	denied := fakeRule{name: "guard", typ: rule.Validating, resp: admission.Denied("guard: no")}
	patching := fakeRule{name: "guard", typ: rule.Mutating, resp: admission.Allowed("").WithWarnings("marked")}
	patching.resp.Patches = admission.PatchResponseFromRaw([]byte(`{"a":1}`), []byte(`{"a":2}`)).Patches
	tests := map[string]struct {
		reason      string
		rule        fakeRule
		contentType string
		body        []byte
		want        answer
	}{
		"DeniedV1": {
			reason: "a v1 review gets the rule's verdict, with the request's uid, in v1",
			rule:   denied, contentType: "application/json", body: reviewOf("admission.k8s.io/v1", req),
			want: answer{Status: 200, APIVersion: "admission.k8s.io/v1", UID: uid, Code: 403, Message: "guard: no"},
		},
		"DeniedV1beta1": {
			reason: "a v1beta1 review is answered in v1beta1, as the API server expects",
			rule:   denied, contentType: "application/json; charset=utf-8", body: reviewOf("admission.k8s.io/v1beta1", req),
			want: answer{Status: 200, APIVersion: "admission.k8s.io/v1beta1", UID: uid, Code: 403, Message: "guard: no"},
		},
		"PatchIsEncoded": {
			reason: "a mutating rule's patch operations reach the API server as a JSONPatch",
			rule:   patching, contentType: "application/json", body: reviewOf("admission.k8s.io/v1", req),
			want: answer{Status: 200, APIVersion: "admission.k8s.io/v1", UID: uid, Allowed: true, Code: 200, PatchType: "JSONPatch", Patch: `[{"op":"replace","path":"/a","value":2}]`},
		},
		"ReviewWithoutRequest": {
			reason: "a review without a request reaches Wrap, which refuses it and counts the refusal",
			rule:   denied, contentType: "application/json", body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`),
			want: answer{Status: 200, APIVersion: "admission.k8s.io/v1", Code: 400, Message: "guard: AdmissionReview has no request (or the request has no uid)"},
		},
		"MalformedJSON": {
			reason: "a body that is not JSON is refused with 400 and says why",
			rule:   denied, contentType: "application/json", body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{`),
			want: answer{Status: 200, APIVersion: "admission.k8s.io/v1", Code: 400, Message: "decoding the AdmissionReview: unexpected end of JSON input"},
		},
		"NotAnAdmissionReview": {
			reason: "another kind of object is refused, naming what it was",
			rule:   denied, contentType: "application/json", body: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}}`),
			want: answer{Status: 200, APIVersion: "admission.k8s.io/v1", Code: 400, Message: `expected an AdmissionReview of admission.k8s.io/v1 or v1beta1, got kind "Pod" of "v1"`},
		},
		"WrongContentType": {
			reason: "only JSON reviews are read",
			rule:   denied, contentType: "text/plain", body: reviewOf("admission.k8s.io/v1", req),
			want: answer{Status: 200, APIVersion: "admission.k8s.io/v1", Code: 400, Message: "contentType=text/plain, expected application/json"},
		},
		"EmptyBody": {
			reason: "an empty body is refused",
			rule:   denied, contentType: "application/json",
			want: answer{Status: 200, APIVersion: "admission.k8s.io/v1", Code: 400, Message: "request body is empty"},
		},
		"OverTheSizeLimit": {
			reason: "a body over the limit is refused with 413 without being read further",
			rule:   denied, contentType: "application/json", body: append(reviewOf("admission.k8s.io/v1", req), bytes.Repeat([]byte(" "), serving.MaxReviewBytes)...),
			want: answer{Status: 200, APIVersion: "admission.k8s.io/v1", Code: 413, Message: "request entity is too large; limit is 7340032 bytes"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := serving.Serve(serving.Wrap(tc.rule, rule.Webhook{}, serving.Options{Mode: rule.Enforce, Log: logr.Discard()}), logr.Discard())
			if diff := cmp.Diff(tc.want, serve(t, h, tc.contentType, tc.body)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestServeReusesBuffersSafely sends a large review and then a small one:
// the second answer must not carry anything of the first, although both
// pass through the same pooled buffer.
func TestServeReusesBuffersSafely(t *testing.T) {
	echo := admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		return admission.Denied(string(req.Object.Raw))
	})
	h := serving.Serve(echo, logr.Discard())
	big := admissiontest.Create(deployments, "Deployment", map[string]any{"metadata": map[string]any{"name": strings.Repeat("x", 4096)}}).Build()
	small := admissiontest.Create(deployments, "Deployment", map[string]any{"metadata": map[string]any{"name": "y"}}).Build()
	for i := 0; i < 3; i++ {
		serve(t, h, "application/json", reviewOf("admission.k8s.io/v1", big))
		got := serve(t, h, "application/json", reviewOf("admission.k8s.io/v1", small))
		if want := `{"metadata":{"name":"y"}}`; got.Message != want {
			t.Fatalf("round %d: the small request's object reads %q, want %q", i, got.Message, want)
		}
	}
}

// nameRule denies every request, naming the object its View reads.
type nameRule struct{}

func (nameRule) Handle(_ context.Context, req *rule.Request) admission.Response {
	return admission.Denied("name " + req.View().Name() + ", old name " + req.OldView().Name())
}

func (nameRule) Spec() rule.Spec {
	return rule.Spec{Name: "names", Type: rule.Validating, Webhooks: []rule.Webhook{{Path: "/validate/names"}}}
}

// TestTableServesEachRequestItsOwnObjects sends requests with large and
// small objects, concurrently, through a Table's handler: the server
// reuses one Request and its Views from call to call, and every answer
// must still name its own request's objects, never a previous one's.
func TestTableServesEachRequestItsOwnObjects(t *testing.T) {
	table := serving.NewTable([]serving.Served{{Rule: nameRule{}, Mode: rule.Enforce}}, serving.Settings{}, nil, serving.NewMetrics(), logr.Discard())
	h := table.HTTP("/validate/names", serving.HTTPOptions{Limit: serving.NewInflightLimit(1<<30, logr.Discard()), Log: logr.Discard()})
	named := func(name string) map[string]any { return map[string]any{"metadata": map[string]any{"name": name}} }
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				name := fmt.Sprintf("w%d-%d-%s", w, i, strings.Repeat("x", (i%3)*2000))
				var req admission.Request
				if i%2 == 0 {
					req = admissiontest.Create(deployments, "Deployment", named(name)).Build()
				} else {
					req = admissiontest.Update(deployments, "Deployment", named(name+"-old"), named(name)).Build()
				}
				got := serve(t, h, "application/json", reviewOf("admission.k8s.io/v1", req))
				want := "name " + name + ", old name "
				if i%2 == 1 {
					want += name + "-old"
				}
				if got.Message != want {
					t.Errorf("answer %q, want %q", got.Message, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// FuzzServe sends arbitrary bodies: every one must be answered with an
// AdmissionReview (HTTP 200), never a panic, and nothing that is not a
// readable review may be allowed.
func FuzzServe(f *testing.F) {
	req := admissiontest.Create(deployments, "Deployment", map[string]any{"metadata": map[string]any{"name": "web", "namespace": "default"}}).Build()
	f.Add(reviewOf("admission.k8s.io/v1", req))
	f.Add(reviewOf("admission.k8s.io/v1beta1", req))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","operation":"CREATE","kind":{"kind":"X"},"object":[1]}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	allow := fakeRule{name: "guard", typ: rule.Validating, resp: admission.Allowed("")}
	h := serving.Serve(serving.Wrap(allow, rule.Webhook{}, serving.Options{Mode: rule.Enforce, Log: logr.Discard()}), logr.Discard())
	f.Fuzz(func(t *testing.T, body []byte) {
		got := serve(t, h, "application/json", body)
		if got.Status != http.StatusOK {
			t.Fatalf("HTTP %d", got.Status)
		}
		if got.Allowed && got.UID == "" {
			t.Fatalf("allowed a body without a request uid: %+v", got)
		}
	})
}

// TestTableAnswersAPathItDoesNotServeWithAnError: a handler asked for a
// path no rule registered answers 404 with the path named, rather than
// panic on the missing entry.
func TestTableAnswersAPathItDoesNotServeWithAnError(t *testing.T) {
	table := serving.NewTable([]serving.Served{{Rule: nameRule{}, Mode: rule.Enforce}}, serving.Settings{}, nil, serving.NewMetrics(), logr.Discard())
	got := table.Handler("/validate/nothing").Handle(context.Background(), admissiontest.Create(deployments, "Deployment", map[string]any{"metadata": map[string]any{"name": "web"}}).Build())
	if got.Allowed || got.Result == nil || got.Result.Code != http.StatusNotFound || !strings.Contains(got.Result.Message, "/validate/nothing") {
		t.Errorf("got allowed=%v %+v; want a 404 naming the path", got.Allowed, got.Result)
	}
}
