package serving

import (
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Serve is serve, the handler of one path, for the tests and benchmarks of
// package serving_test.
var Serve = serve

// Wrap is wrap, the handler the table serves at one of a rule's paths, for
// the tests and benchmarks of package serving_test.
func Wrap(r rule.Rule, wh rule.Webhook, opts Options) admission.Handler { return wrap(r, wh, opts) }
