package ruletest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/serving"
)

// RefusedThroughTheServer sends req through the whole HTTP handler the
// webhook server registers for r's first webhook (drain, memory budget,
// review decoding, the configuration's table, the mode and Events
// wrapper), and fails unless the answer is the refusal r gives when asked
// directly. STEWARD_REQUEST_PATH_CALLS sends it that many times:
// docs/requestpath_test.go compares the code one call more runs to find
// the files a refused request visits.
func RefusedThroughTheServer(t *testing.T, r rule.Rule, req admission.Request) {
	t.Helper()
	calls := 1
	if s := os.Getenv("STEWARD_REQUEST_PATH_CALLS"); s != "" {
		var err error
		if calls, err = strconv.Atoi(s); err != nil {
			t.Fatalf("STEWARD_REQUEST_PATH_CALLS=%q: %v", s, err)
		}
	}
	events := serving.NewDenialEvents(func(string) serving.EventRecorder { return nil })
	table := serving.NewTable([]serving.Served{{Rule: r, Mode: rule.Enforce}}, serving.Settings{RecordEvents: true}, events, serving.NewMetrics(), logr.Discard())
	path := r.Spec().Webhooks[0].Path
	h := table.HTTP(path, serving.HTTPOptions{Limit: serving.NewInflightLimit(64<<20, logr.Discard()), Drain: &serving.Drain{}, Log: logr.Discard()})

	want := Judge(t.Context(), r, req)
	if want.Allowed {
		t.Fatalf("the rule allows the request: %v", want.Result)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &req.AdmissionRequest})
	if err != nil {
		t.Fatal(err)
	}
	for range calls {
		hr := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		hr.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, hr)
		var got admissionv1.AdmissionReview
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.Response == nil {
			t.Fatalf("HTTP %d, not an answer: %v\n%s", w.Code, err, w.Body)
		}
		if got.Response.Allowed || got.Response.Result == nil || got.Response.Result.Message != want.Result.Message {
			t.Fatalf("answer through the server: allowed %v, %+v; want the refusal %q", got.Response.Allowed, got.Response.Result, want.Result.Message)
		}
	}
}
