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
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kjson "sigs.k8s.io/json"

	"github.com/stewardhq/steward/webhooks/object"
)

// MaxReviewBytes is the largest AdmissionReview body Serve reads: two
// objects at the API server's 3 MiB request limit plus the rest of the
// request, the same limit controller-runtime applies.
const MaxReviewBytes = 7 * 1024 * 1024

// Serve returns the HTTP handler for one webhook path: it reads the
// AdmissionReview the API server sends, asks h, and writes the answer in
// the review's own version (admission.k8s.io/v1 or v1beta1).
//
// It takes the place of controller-runtime's admission.Webhook on the
// request path because every call pays for that one's generality: the
// review is decoded twice (a pass to find its kind, then the typed decode)
// and a request logger is built twice, where Steward decodes once, leaves
// the objects to the rules (decodeReview) and builds no logger unless the
// request is malformed. Like admission.Webhook, it always answers HTTP 200
// with an AdmissionReview, so even a malformed request gets a verdict that
// says what was wrong with it.
func Serve(h admission.Handler, log logr.Logger) http.Handler {
	return &server{handler: h, log: log}
}

type server struct {
	handler admission.Handler
	log     logr.Logger
}

// buffers holds the byte buffers that carry a review in and its answer
// out, so a call allocates neither.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// reviewV1 is the version Serve answers in when the request's own cannot
// be read.
var reviewV1 = metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	buf := buffers.Get().(*bytes.Buffer)
	defer func() {
		// A buffer that grew for one huge review is left to the GC
		// rather than kept for every later, small one.
		if buf.Cap() <= 1<<20 {
			buffers.Put(buf)
		}
	}()
	buf.Reset()

	review, status, err := readReview(r, buf)
	if err != nil {
		s.log.Info("refusing a request that is not a readable AdmissionReview", "path", r.URL.Path, "remote", r.RemoteAddr, "error", err.Error())
		s.write(w, buf, review.TypeMeta, admission.Errored(status, err))
		return
	}
	req := admission.Request{AdmissionRequest: *review.Request}
	resp := s.handler.Handle(r.Context(), req)
	if err := resp.Complete(req); err != nil {
		s.log.Error(err, "encoding the patch of a response", "path", r.URL.Path, "uid", req.UID)
		resp = admission.Errored(http.StatusInternalServerError, errors.New("the webhook could not encode its answer"))
		resp.UID = req.UID
	}
	s.write(w, buf, review.TypeMeta, resp)
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
