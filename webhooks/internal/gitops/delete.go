package gitops

import (
	"context"
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// delete judges a DELETE: the stored object (oldObject) says who owns
// it, and an object an owner still manages is refused, since its tool
// would re-create it.
func (g *Guard) delete(ctx context.Context, req *rule.Request) admission.Response {
	v := req.OldView()
	if !v.Present() {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("delete: the request carries no oldObject, so the object's owner cannot be checked"))
	}
	if err := v.FormErr(); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("delete: %w", err))
	}
	ref := RefOf(req, v)
	c := g.resolver.Claim(ref, v)
	if !c.Claims {
		return admission.Allowed(c.NotClaimed)
	}
	owners, resp, ok := g.managing(ctx, req, ref, v)
	if !ok {
		return resp
	}
	return admission.Denied(g.msg.deleting(ref, owners))
}
