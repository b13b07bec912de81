package gitops

import (
	"context"
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// create judges a CREATE: an object created with the tool's markers
// passes for one the tool deployed, so only the tool, or a writer of the
// owner they name, may create it (claiming, in guard.go: an update that
// adds the markers is judged the same way).
func (g *Guard) create(ctx context.Context, req *rule.Request) admission.Response {
	v := req.View()
	if err := v.FormErr(); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("create: %w", err))
	}
	ref := RefOf(req, v)
	c := g.resolver.Claim(ref, v)
	if !c.Claims {
		return admission.Allowed(c.NotClaimed)
	}
	return g.claiming(ctx, req, ref, v, c, "carries")
}
