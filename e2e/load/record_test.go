package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRecorderKeepsTheFirstReviewPerPathOnceArmed(t *testing.T) {
	rec := newRecorder()
	var seen []string
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, string(b))
	})
	a, b := rec.wrap("/a", echo), rec.wrap("/b", echo)
	mux := http.NewServeMux()
	rec.serve(mux)
	send := func(h http.Handler, body string) {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
	}
	recorded := func() map[string][]byte {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/recorded", nil))
		got := map[string][]byte{}
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatalf("GET /recorded: %v: %s", err, w.Body)
		}
		return got
	}

	send(a, "before")
	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/record", nil))
	send(a, "first-a")
	send(a, "second-a")
	send(b, "first-b")
	got := recorded()
	if string(got["/a"]) != "first-a" || string(got["/b"]) != "first-b" || len(got) != 2 {
		t.Errorf("recorded %q, want /a first-a and /b first-b", got)
	}
	if want := []string{"before", "first-a", "second-a", "first-b"}; strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("the handler saw %q, want every body unchanged: %q", seen, want)
	}
	send(a, "after")
	if got := recorded(); string(got["/a"]) != "first-a" {
		t.Errorf("after GET /recorded the recorder must be disarmed, got %q", got)
	}
}

func TestCallDirectTellsVerdictsFromErrors(t *testing.T) {
	tests := map[string]struct {
		status  int
		answer  string
		wantErr bool
	}{
		"Allowed":       {http.StatusOK, `{"response":{"allowed":true}}`, false},
		"Denied":        {http.StatusOK, `{"response":{"allowed":false,"status":{"code":403,"message":"no"}}}`, false},
		"ErroredReview": {http.StatusOK, `{"response":{"allowed":false,"status":{"code":400,"message":"bad"}}}`, true},
		"NotAReview":    {http.StatusOK, `{}`, true},
		"HTTPError":     {http.StatusInternalServerError, `oops`, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.answer))
			}))
			defer srv.Close()
			err := callDirect(context.Background(), srv.Client(), srv.URL, bytes.Repeat([]byte("x"), 10))
			if (err != nil) != tc.wantErr {
				t.Errorf("callDirect = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
