package serving

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// requests holds Requests between calls, so that the Views' indexes keep
// the memory they grew into instead of allocating it for every request.
var requests = sync.Pool{New: func() any { return new(rule.Request) }}

// acquire returns a reused Request for req.
func acquire(req admission.Request) *rule.Request {
	r := requests.Get().(*rule.Request)
	r.Reset(req)
	return r
}

// release returns r to requests, holding nothing of its request.
func release(r *rule.Request) {
	r.Reset(admission.Request{})
	requests.Put(r)
}

// Judge asks r about req through a reused Request, as the server does
// (without Wrap's modes, exemptions and metrics): what a rule's own
// tests and benchmarks measure.
func Judge(ctx context.Context, r rule.Rule, req admission.Request) admission.Response {
	rr := acquire(req)
	defer release(rr)
	return r.Handle(ctx, rr)
}
