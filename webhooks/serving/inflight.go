package serving

import (
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

// Anyone who can reach the webhook port can send an AdmissionReview: the
// port must accept the API server without client certificates unless they
// are configured. A review may be 7 MiB, and reading and deciding it holds
// a few times that, so a hundred concurrent ones would hold gigabytes and
// get Steward OOM-killed, failing every guarded write in the cluster.
// InflightLimit bounds that memory before a body is read: each request is
// charged a multiple of its Content-Length against a budget, and one the
// budget cannot hold is answered at once with 429 and Retry-After, reading
// nothing. The API server retries nothing itself, so the webhook's failure
// policy then applies to that one call, as it would to a timeout.

// SmallReviewBytes is the largest body charged to the small-review reserve.
// The API server's reviews of ordinary objects are a few KiB; a flood of
// maximum-size bodies cannot take the reserve from them.
const SmallReviewBytes = 256 << 10

// memoryPerBodyByte is what a request holds per byte of its body while it
// is read and decided: the body's buffer, the objects decoded out of it,
// and the rule's own reading, measured at up to about three times the
// body for fleetguard's update of a 3 MiB object.
const memoryPerBodyByte = 3

// InflightLimit is a budget of memory for request bodies in flight, shared
// by every webhook path, with a reserve for small reviews.
type InflightLimit struct {
	large, small budget
	log          logr.Logger

	refused  prometheus.Counter
	inFlight prometheus.GaugeFunc
}

// NewInflightLimit splits total bytes between large reviews (two thirds)
// and a reserve for reviews of at most SmallReviewBytes (one third).
func NewInflightLimit(total int64, log logr.Logger) *InflightLimit {
	l := &InflightLimit{log: log}
	l.small.limit = total / 3
	l.large.limit = total - l.small.limit
	l.refused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "steward_requests_refused_for_memory_total",
		Help: "Requests Steward answered 429 before reading them, because the memory budget for requests in flight (--request-memory) was spent.",
	})
	l.inFlight = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "steward_request_memory_inflight_bytes",
		Help: "Memory charged to request bodies being read or decided (a multiple of their size).",
	}, func() float64 { return float64(l.large.used.Load() + l.small.used.Load()) })
	return l
}

// Describe and Collect make the limit a prometheus.Collector of its two
// metrics, to register with the manager's registry.
func (l *InflightLimit) Describe(ch chan<- *prometheus.Desc) {
	l.refused.Describe(ch)
	l.inFlight.Describe(ch)
}

// Collect implements prometheus.Collector.
func (l *InflightLimit) Collect(ch chan<- prometheus.Metric) {
	l.refused.Collect(ch)
	l.inFlight.Collect(ch)
}

// Wrap charges each request to next against the budget.
func (l *InflightLimit) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size := r.ContentLength
		if size > MaxReviewBytes {
			// Serve refuses it with a verdict without reading it, which
			// holds no memory worth counting.
			next.ServeHTTP(w, r)
			return
		}
		if size < 0 {
			// No Content-Length (a chunked body): it may be as large as
			// any review. The API server always sends one.
			size = MaxReviewBytes
		}
		pool := &l.large
		if size <= SmallReviewBytes {
			pool = &l.small
		}
		cost := size * memoryPerBodyByte
		if !pool.tryAcquire(cost) {
			l.refuse(w, r)
			return
		}
		defer pool.release(cost)
		next.ServeHTTP(w, r)
	})
}

// refuse answers 429 without reading the body, and closes the connection
// so the unread body need not be drained. It is a plain HTTP error, not an
// AdmissionReview: the API server then applies the webhook's failure
// policy, as for a timeout, where a verdict would count as a denial even
// on a webhook that fails open.
func (l *InflightLimit) refuse(w http.ResponseWriter, r *http.Request) {
	const msg = "Steward is reading as many requests as its memory allows; retry shortly\n"
	l.refused.Inc()
	l.log.V(1).Info("refusing a request before reading it: the request memory budget is spent", "path", r.URL.Path, "remote", r.RemoteAddr, "contentLength", r.ContentLength)
	h := w.Header()
	h.Set("Retry-After", "1")
	h.Set("Connection", "close")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(msg)))
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte(msg))
}

// budget is a count of bytes that requests take without waiting: a request
// that does not fit is refused, never queued, so waiting requests cannot
// pile up memory of their own.
type budget struct {
	used  atomic.Int64
	limit int64
}

func (b *budget) tryAcquire(n int64) bool {
	for {
		used := b.used.Load()
		if used+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

func (b *budget) release(n int64) { b.used.Add(-n) }
