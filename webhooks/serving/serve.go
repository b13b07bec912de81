package serving

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kjson "sigs.k8s.io/json"

	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// MaxReviewBytes is the largest AdmissionReview body serve reads: two
// objects at the API server's 3 MiB request limit plus the rest of the
// request, the same limit controller-runtime applies.
const MaxReviewBytes = 7 * 1024 * 1024

// serve returns the HTTP handler for one webhook path: it reads the
// AdmissionReview the API server sends, asks h, and writes the answer in
// the review's own version (admission.k8s.io/v1 or v1beta1). The webhook
// server's handlers come from Table.HTTP, which asks the configuration in
// effect instead of one handler.
//
// It takes the place of controller-runtime's admission.Webhook on the
// request path because every call pays for that one's generality: the
// review is decoded twice (a pass to find its kind, then the typed decode)
// and a request logger is built twice, where Steward decodes once, leaves
// the objects to the rules (decodeReview) and builds no logger unless the
// request is malformed. Like admission.Webhook, it always answers HTTP 200
// with an AdmissionReview, so even a malformed request gets a verdict that
// says what was wrong with it.
func serve(h admission.Handler, log logr.Logger) http.Handler {
	j, ok := h.(judge)
	if !ok {
		j = handlerJudge{h}
	}
	return &server{fixed: j, log: log}
}

// server answers at one path: with fixed, or with the path's handler in
// table's current configuration.
type server struct {
	fixed judge
	table *Table
	path  string
	log   logr.Logger
}

// A call is the memory one request is read, judged and answered in: the
// buffer that carries the review in and the answer out, and the Request
// the rule reads, with its objects' Views.
type call struct {
	buf bytes.Buffer
	req rule.Request
}

// calls holds calls between requests, so that a request allocates neither
// its buffer nor its Request, and the Views' indexes keep the memory they
// grew into.
var calls = sync.Pool{New: func() any { return new(call) }}

// reviewV1 is the version serve answers in when the request's own cannot
// be read.
var reviewV1 = metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := calls.Get().(*call)
	defer func() {
		// The Request holds nothing of this request once answered, and
		// a buffer that grew for one huge review is left to the GC
		// rather than kept for every later, small one.
		c.req.Reset(admission.Request{})
		if c.buf.Cap() <= 1<<20 {
			calls.Put(c)
		}
	}()
	c.buf.Reset()

	review, status, err := readReview(r, &c.buf)
	if err != nil {
		s.log.Info("refusing a request that is not a readable AdmissionReview", "path", r.URL.Path, "remote", r.RemoteAddr, "error", err.Error())
		s.write(w, &c.buf, review.TypeMeta, admission.Errored(status, err))
		return
	}
	c.req.Reset(admission.Request{AdmissionRequest: *review.Request})
	j := s.fixed
	if j == nil {
		j = (*s.table.current.Load())[s.path]
	}
	resp := j.judge(r.Context(), &c.req)
	if err := resp.Complete(c.req.Request); err != nil {
		s.log.Error(err, "encoding the patch of a response", "path", r.URL.Path, "uid", c.req.UID)
		resp = admission.Errored(http.StatusInternalServerError, errors.New("the webhook could not encode its answer"))
		resp.UID = c.req.UID
	}
	s.write(w, &c.buf, review.TypeMeta, resp)
}

// readReview reads and decodes the request body into buf and a review.
// On error it returns the HTTP status that names the problem; the review's
// TypeMeta is then the version to answer in.
func readReview(r *http.Request, buf *bytes.Buffer) (admissionv1.AdmissionReview, int32, error) {
	review := admissionv1.AdmissionReview{TypeMeta: reviewV1}
	if r.Body == nil || r.Body == http.NoBody {
		return review, http.StatusBadRequest, errors.New("request body is empty")
	}
	defer r.Body.Close()
	if ct := r.Header.Get("Content-Type"); ct != "application/json" && !strings.HasPrefix(ct, "application/json;") {
		return review, http.StatusBadRequest, fmt.Errorf("contentType=%s, expected application/json", ct)
	}
	if r.ContentLength > MaxReviewBytes {
		// Refused unread: reading it would only hold memory.
		return review, http.StatusRequestEntityTooLarge, fmt.Errorf("request entity is too large; limit is %d bytes", MaxReviewBytes)
	}
	if r.ContentLength > 0 {
		// Room for the whole body at once: growing step by step would
		// leave a large body's buffer up to twice its size.
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, MaxReviewBytes+1)); err != nil {
		return review, http.StatusBadRequest, fmt.Errorf("reading the request body: %w", err)
	}
	switch {
	case buf.Len() == 0:
		return review, http.StatusBadRequest, errors.New("request body is empty")
	case buf.Len() > MaxReviewBytes:
		return review, http.StatusRequestEntityTooLarge, fmt.Errorf("request entity is too large; limit is %d bytes", MaxReviewBytes)
	}
	// The objects are copied out of buf, so buf can carry the answer.
	if err := decodeReview(buf.Bytes(), &review); err != nil {
		return admissionv1.AdmissionReview{TypeMeta: reviewV1}, http.StatusBadRequest, fmt.Errorf("decoding the AdmissionReview: %w", err)
	}
	if review.Kind != "AdmissionReview" || (review.APIVersion != "admission.k8s.io/v1" && review.APIVersion != "admission.k8s.io/v1beta1") {
		got := review.TypeMeta
		review.TypeMeta = reviewV1
		return review, http.StatusBadRequest, fmt.Errorf("expected an AdmissionReview of admission.k8s.io/v1 or v1beta1, got kind %q of %q", got.Kind, got.APIVersion)
	}
	if review.Request == nil {
		// Wrap refuses a request without a uid, counting and logging it
		// like every other decision.
		review.Request = &admissionv1.AdmissionRequest{}
	}
	return review, 0, nil
}

// write sends resp in an AdmissionReview of the version typ names, with
// a Content-Length, in one write.
func (s *server) write(w http.ResponseWriter, buf *bytes.Buffer, typ metav1.TypeMeta, resp admission.Response) {
	buf.Reset()
	out := admissionv1.AdmissionReview{TypeMeta: typ, Response: &resp.AdmissionResponse}
	if err := json.NewEncoder(buf).Encode(out); err != nil {
		s.log.Error(err, "encoding an AdmissionReview")
		http.Error(w, "the webhook could not encode its answer", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	if _, err := w.Write(buf.Bytes()); err != nil {
		s.log.V(1).Info("writing the answer", "error", err.Error())
	}
}

// bodyReadTimeout bounds how long a client may take to send a request body.
// The webhook server only bounds the headers (ReadHeaderTimeout), so a client
// trickling a body a byte at a time would otherwise hold a connection and a
// goroutine forever. The API server sends a review at once and gives up on a
// webhook after at most 30 s, so 10 s never cuts off a real call.
const bodyReadTimeout = 10 * time.Second

// withBodyDeadline sets a read deadline on the connection before the
// handler reads the body.
func withBodyDeadline(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Not every ResponseWriter supports deadlines (httptest's does
		// not); serving without one beats refusing the request.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
		next.ServeHTTP(w, r)
	})
}

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
			// serve refuses it with a verdict without reading it, which
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

// Drain moves the API server off a replica that is shutting down before
// the replica stops listening.
//
// The API server keeps its connections to a webhook open between calls
// (HTTP keep-alive), and a Service's endpoints only steer new
// connections: a replica that left the endpoints keeps receiving calls on
// the connections already open to it. When it then closes an idle one,
// the API server may have just sent a call on it, which fails ("failed
// calling webhook ... EOF"): the API server never retries a POST. So from
// Begin on (SIGTERM, while the replica keeps serving for --shutdown-delay)
// every answer carries Connection: close, and its connection is closed
// once the answer is sent. The API server reads that header with the
// answer and opens a new connection for its next call, which the Service
// sends to another replica. By the end of the delay the connections in
// use have moved; only ones left idle throughout remain. Over HTTP/2 Go's
// server turns the header into a GOAWAY, with the same effect.
type Drain struct {
	draining atomic.Bool
}

// Begin starts the drain: answers from now on close their connections.
func (d *Drain) Begin() { d.draining.Store(true) }

// Draining says whether Begin has been called.
func (d *Drain) Draining() bool { return d.draining.Load() }

// Wrap makes next's answers close their connections once the drain has
// begun, including the answers of requests that arrived before it.
func (d *Drain) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&closingWriter{ResponseWriter: w, drain: d}, r)
	})
}

// closingWriter adds Connection: close to an answer's header when the
// header is written during the drain.
type closingWriter struct {
	http.ResponseWriter
	drain   *Drain
	decided bool
}

func (c *closingWriter) decide() {
	if c.decided {
		return
	}
	c.decided = true
	if c.drain.Draining() {
		c.Header().Set("Connection", "close")
	}
}

func (c *closingWriter) WriteHeader(code int) {
	c.decide()
	c.ResponseWriter.WriteHeader(code)
}

func (c *closingWriter) Write(b []byte) (int, error) {
	c.decide()
	return c.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the underlying writer (deadlines,
// flushing).
func (c *closingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
