package rule

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/object"
)

// A Request is one admission request as the serving layer hands it to a
// rule: the request the API server sent, and one View of each of its
// objects, so that every rule reads objects the same way and each object
// is read once however many questions are asked of it. A rule must not
// keep a Request, or anything its Views return, after Handle returns: the
// serving layer reuses their memory for the next request.
type Request struct {
	admission.Request
	object, oldObject object.View
}

// NewRequest returns the Request for req, for tests and callers outside
// the serving layer; the serving layer reuses Requests (Judge).
func NewRequest(req admission.Request) *Request {
	r := &Request{}
	r.reset(req)
	return r
}

func (r *Request) reset(req admission.Request) {
	r.Request = req
	r.object.Reset(req.Object.Raw)
	r.oldObject.Reset(req.OldObject.Raw)
}

// View returns the view of the object the request writes
// (request.object): not Present on DELETE.
func (r *Request) View() *object.View { return &r.object }

// OldView returns the view of the stored object (request.oldObject): not
// Present on CREATE.
func (r *Request) OldView() *object.View { return &r.oldObject }

// requests holds Requests between calls, so that the Views' indexes keep
// the memory they grew into instead of allocating it for every request.
var requests = sync.Pool{New: func() any { return new(Request) }}

// Judge asks r about req through a reused Request: the serving layer's
// one way to call a rule, which benchmarks and tests share.
func Judge(ctx context.Context, r Rule, req admission.Request) admission.Response {
	rr := requests.Get().(*Request)
	rr.reset(req)
	defer release(rr)
	return r.Handle(ctx, rr)
}

// release returns r to requests, holding nothing of its request.
func release(r *Request) {
	r.reset(admission.Request{})
	requests.Put(r)
}

// Handler returns r as a controller-runtime admission.Handler that calls
// it through Judge, without Wrap's modes, exemptions and metrics: what a
// rule's own tests and benchmarks measure.
func Handler(r Rule) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		return Judge(ctx, r, req)
	})
}
