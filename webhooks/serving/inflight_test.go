package serving

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// holding is a handler that reports each request it receives on entered
// and answers once release is closed, so tests can keep requests in flight.
type holding struct {
	entered chan struct{}
	release chan struct{}
}

func newHolding() *holding {
	return &holding{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (h *holding) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.entered <- struct{}{}
	<-h.release
	_, _ = io.Copy(io.Discard, r.Body)
	w.WriteHeader(http.StatusOK)
}

func post(t *testing.T, h http.Handler, size int64) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/validate/x", strings.NewReader(strings.Repeat("x", int(max(size, 0)))))
	r.ContentLength = size
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// inFlight starts a request of size that the holding handler keeps, and
// returns once the handler has it.
func inFlight(t *testing.T, h http.Handler, next *holding, size int64, wg *sync.WaitGroup) {
	t.Helper()
	wg.Add(1)
	go func() {
		defer wg.Done()
		post(t, h, size)
	}()
	<-next.entered
}

func TestInflightLimitRefusesWhatTheBudgetCannotHold(t *testing.T) {
	// 48 MiB: 32 MiB for large reviews (one 7 MiB review costs 21 MiB),
	// 16 MiB for small ones.
	l := NewInflightLimit(48<<20, logr.Discard())
	next := newHolding()
	h := l.Wrap(next)
	var wg sync.WaitGroup
	inFlight(t, h, next, MaxReviewBytes, &wg)

	w := post(t, h, MaxReviewBytes)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Errorf("a second maximum-size review while one is in flight: %d, Retry-After %q; want 429 with Retry-After 1", w.Code, w.Header().Get("Retry-After"))
	}
	if got := testutil.ToFloat64(l.refused); got != 1 {
		t.Errorf("steward_requests_refused_for_memory_total = %v, want 1", got)
	}
	if got := testutil.ToFloat64(l.inFlight); got != 3*MaxReviewBytes {
		t.Errorf("steward_request_memory_inflight_bytes = %v, want %v", got, 3*MaxReviewBytes)
	}

	// Small reviews have their own reserve: the API server's ordinary
	// reviews pass while large ones are refused.
	smallDone := make(chan int)
	go func() { smallDone <- post(t, h, 8<<10).Code }()
	<-next.entered
	close(next.release)
	if code := <-smallDone; code != http.StatusOK {
		t.Errorf("a small review while the large budget is spent: %d, want 200", code)
	}
	wg.Wait()

	if got := testutil.ToFloat64(l.inFlight); got != 0 {
		t.Errorf("after every request finished %v bytes are still charged", got)
	}
	if w := post(t, h, MaxReviewBytes); w.Code != http.StatusOK {
		t.Errorf("a maximum-size review once the budget is free again: %d, want 200", w.Code)
	}
}

func TestInflightLimitSmallReserveIsBoundedToo(t *testing.T) {
	// 12 KiB of small reserve: two 2 KiB reviews (6 KiB each) fill it.
	l := NewInflightLimit(36<<10, logr.Discard())
	next := newHolding()
	h := l.Wrap(next)
	var wg sync.WaitGroup
	inFlight(t, h, next, 2<<10, &wg)
	inFlight(t, h, next, 2<<10, &wg)
	if w := post(t, h, 2<<10); w.Code != http.StatusTooManyRequests {
		t.Errorf("a third small review past the reserve: %d, want 429", w.Code)
	}
	close(next.release)
	wg.Wait()
}

func TestInflightLimitPassesOversizedUnchargedAndChargesUnknownLengthsAsTheMaximum(t *testing.T) {
	l := NewInflightLimit(48<<20, logr.Discard())
	next := newHolding()
	h := l.Wrap(next)
	// An oversized body is Serve's to refuse, unread; it takes no budget,
	// so a second one is not refused for memory either.
	var wg sync.WaitGroup
	inFlight(t, h, next, MaxReviewBytes+1, &wg)
	inFlight(t, h, next, MaxReviewBytes+1, &wg)
	if got := testutil.ToFloat64(l.inFlight); got != 0 {
		t.Errorf("oversized bodies were charged %v bytes", got)
	}
	close(next.release)
	wg.Wait()

	// A chunked body could be of any size: it is charged as the largest
	// review, so two cannot be in flight in a budget that holds one.
	l = NewInflightLimit(48<<20, logr.Discard())
	hold := newHolding()
	h = l.Wrap(hold)
	inFlight(t, h, hold, -1, &wg)
	if w := post(t, h, -1); w.Code != http.StatusTooManyRequests {
		t.Errorf("a second body of unknown length: %d, want 429", w.Code)
	}
	close(hold.release)
	wg.Wait()
}

func TestInflightLimitReleasesAfterAPanic(t *testing.T) {
	l := NewInflightLimit(48<<20, logr.Discard())
	h := l.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	func() {
		defer func() { _ = recover() }()
		post(t, h, MaxReviewBytes)
	}()
	if got := testutil.ToFloat64(l.inFlight); got != 0 {
		t.Errorf("a panicking handler left %v bytes charged", got)
	}
}
