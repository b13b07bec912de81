package rule

import (
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
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
// the serving layer; the serving layer reuses Requests (Reset).
func NewRequest(req admission.Request) *Request {
	r := &Request{}
	r.Reset(req)
	return r
}

// Reset makes r the Request for req, keeping the memory its Views grew
// into.
func (r *Request) Reset(req admission.Request) {
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

// Identities are users and groups a setting names as a request's sender:
// the identities a GitOps tool writes as, those Steward's configuration
// exempts, those who may set an opt-out marker.
type Identities struct {
	Users, Groups []string
}

// Has reports whether u is one of the identities: its name is one of
// Users, or one of its groups one of Groups.
func (ids Identities) Has(u authenticationv1.UserInfo) bool {
	return slices.Contains(ids.Users, u.Username) ||
		slices.ContainsFunc(u.Groups, func(g string) bool { return slices.Contains(ids.Groups, g) })
}
