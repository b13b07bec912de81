package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// recorder keeps the first AdmissionReview the allow-all webhook receives
// on each path after it is armed, so the load tool can later send the very
// reviews the API server made for a workload straight to Steward and to
// the allow-all webhook (see alone.go). A path that has recorded, or is
// not armed, costs one atomic load per request, so recording does not
// weigh on the allow-all's own measurements.
type recorder struct {
	mu    sync.Mutex
	slots map[string]*slot
}

// slot is one path's recording.
type slot struct {
	want atomic.Bool
	body []byte
}

func newRecorder() *recorder { return &recorder{slots: map[string]*slot{}} }

// wrap records the body of next's first request on path once armed.
func (rec *recorder) wrap(path string, next http.Handler) http.Handler {
	s := &slot{}
	rec.mu.Lock()
	rec.slots[path] = s
	rec.mu.Unlock()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.want.CompareAndSwap(true, false) {
			if body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20)); err == nil {
				rec.mu.Lock()
				s.body = body
				rec.mu.Unlock()
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// serve adds the recorder's endpoints to the metrics server: POST /record
// forgets what was recorded and arms every path; GET /recorded disarms
// them and returns what they recorded, by path.
func (rec *recorder) serve(mux *http.ServeMux) {
	mux.HandleFunc("POST /record", func(http.ResponseWriter, *http.Request) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, s := range rec.slots {
			s.body = nil
			s.want.Store(true)
		}
	})
	mux.HandleFunc("GET /recorded", func(w http.ResponseWriter, _ *http.Request) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		got := map[string][]byte{}
		for path, s := range rec.slots {
			s.want.Store(false)
			if s.body != nil {
				got[path] = s.body
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(got)
	})
}

// record arms the allow-all webhook's recorder.
func (a *allowAll) record() error {
	resp, err := scrapeClient.Post(fmt.Sprintf("http://127.0.0.1:%d/record", a.metricsPort), "", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("arming the recorder: %s", resp.Status)
	}
	return nil
}

// recorded returns the reviews recorded since record, by path.
func (a *allowAll) recorded() (map[string][]byte, error) {
	resp, err := scrapeClient.Get(fmt.Sprintf("http://127.0.0.1:%d/recorded", a.metricsPort))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the recorded reviews: %s", resp.Status)
	}
	got := map[string][]byte{}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		return nil, fmt.Errorf("reading the recorded reviews: %w", err)
	}
	return got, nil
}
