package rule

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Decision is the outcome of one admission request, as counted and logged.
type Decision string

const (
	// Allowed: the rule had no objection (patches and warnings may apply).
	Allowed Decision = "allowed"
	// Denied: the rule refused the request in enforce mode.
	Denied Decision = "denied"
	// Warned: the rule would have refused, and warn mode allowed it with a warning.
	Warned Decision = "warned"
	// Audited: the rule would have refused, and audit mode allowed it silently.
	Audited Decision = "audited"
	// Bypassed: the rule would have refused an exempt or break-glass user.
	Bypassed Decision = "bypassed"
	// Errored: the rule could not decide; the webhook's failure policy applied.
	Errored Decision = "errored"
)

// decisions counts every request a rule answers, by outcome. It is registered
// with controller-runtime's registry so it is served next to the per-path
// webhook metrics on the same endpoint.
var decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "steward_decisions_total",
	Help: "Admission decisions made by Steward, by rule and outcome.",
}, []string{"rule", "decision"})

func init() {
	metrics.Registry.MustRegister(decisions)
}

// DecisionCount returns the current value of the decision counter, for tests.
func DecisionCount(rule string, d Decision) float64 {
	return testutil.ToFloat64(decisions.WithLabelValues(rule, string(d)))
}
