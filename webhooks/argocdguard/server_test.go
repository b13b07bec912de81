package argocdguard

import (
	"testing"

	"github.com/stewardhq/steward/webhooks/internal/ruletest"
)

// TestRefusedUpdateThroughTheServer sends a person's kubectl set image of
// a Deployment an Application tracks through the webhook server's whole
// HTTP handler, and expects the refusal the rule gives when asked
// directly; docs/requestpath_test.go measures the files it visits.
func TestRefusedUpdateThroughTheServer(t *testing.T) {
	ruletest.RefusedThroughTheServer(t, defaultRule(), benchImageChange().Build())
}
