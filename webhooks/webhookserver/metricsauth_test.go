package webhookserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeAPIServer answers TokenReviews from tokens (token -> user name) and
// SubjectAccessReviews from allowed (user names), counting the calls.
func fakeAPIServer(tokens map[string]string, allowed map[string]bool, reviews *int, fail bool) *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		*reviews++
		if fail {
			return true, nil, errors.New("the API server is unavailable")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if name, ok := tokens[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: name, Groups: []string{"system:authenticated"}}}
		}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		*reviews++
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		ok := allowed[sar.Spec.User] && sar.Spec.NonResourceAttributes != nil && sar.Spec.NonResourceAttributes.Path == "/metrics" && sar.Spec.NonResourceAttributes.Verb == "get"
		sar.Status.Allowed = ok
		return true, sar, nil
	})
	return cs
}

func TestMetricsAuthAnswersOnlyAuthorizedScrapers(t *testing.T) {
	reviews := 0
	cs := fakeAPIServer(map[string]string{"good": "prometheus", "other": "jane"}, map[string]bool{"prometheus": true}, &reviews, false)
	a := &metricsAuth{client: cs, users: newTTLCache[authenticationv1.UserInfo](), decisions: newTTLCache[bool]()}
	h, err := a.filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	if err != nil {
		t.Fatal(err)
	}
	get := func(auth string) int {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for name, tc := range map[string]struct {
		auth string
		want int
	}{
		"NoToken":           {"", http.StatusUnauthorized},
		"NotBearer":         {"Basic Z29vZA==", http.StatusUnauthorized},
		"UnknownToken":      {"Bearer forged", http.StatusUnauthorized},
		"AuthenticatedOnly": {"Bearer other", http.StatusForbidden},
		"Authorized":        {"Bearer good", http.StatusOK},
	} {
		if got := get(tc.auth); got != tc.want {
			t.Errorf("%s: HTTP %d, want %d", name, got, tc.want)
		}
	}
	before := reviews
	for range 5 {
		if got := get("Bearer good"); got != http.StatusOK {
			t.Fatalf("a repeated authorized scrape: HTTP %d", got)
		}
	}
	if reviews != before {
		t.Errorf("5 repeated scrapes made %d more reviews; the answers must be cached", reviews-before)
	}
}

func TestMetricsAuthUnavailableAPIServerIsNoAllow(t *testing.T) {
	reviews := 0
	a := &metricsAuth{client: fakeAPIServer(nil, nil, &reviews, true), users: newTTLCache[authenticationv1.UserInfo](), decisions: newTTLCache[bool]()}
	h, _ := a.filter(logr.Discard(), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("served without a review") }))
	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	r.Header.Set("Authorization", "Bearer good")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("HTTP %d, want 503", w.Code)
	}
}

func TestTTLCacheIsBounded(t *testing.T) {
	c := newTTLCache[bool]()
	for i := range maxCached * 3 {
		c.put(string(rune(i)), true, authnTTL)
	}
	if n := len(c.entries); n > maxCached {
		t.Errorf("%d entries, want at most %d", n, maxCached)
	}
}
