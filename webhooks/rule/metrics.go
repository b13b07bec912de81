package rule

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// decisionSeconds is the time a rule takes to decide, from the decoded
// request to the answer, without reading the body or writing the answer
// (controller-runtime's controller_runtime_webhook_latency_seconds covers
// the whole HTTP exchange). It tells a slow rule, e.g. one whose cache
// lookups grew with the cluster, from a slow network or a busy node.
// Classic buckets from 25 µs to 2.5 s serve any Prometheus; the native
// buckets (about 10% wide) give exact percentiles where it reads them.
var decisionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:                            "steward_decision_duration_seconds",
	Help:                            "Time Steward's rules take to decide an admission request, by rule.",
	Buckets:                         prometheus.ExponentialBuckets(25e-6, 4, 10),
	NativeHistogramBucketFactor:     1.1,
	NativeHistogramMaxBucketNumber:  100,
	NativeHistogramMinResetDuration: time.Hour,
}, []string{"rule"})

func init() {
	metrics.Registry.MustRegister(decisions, decisionSeconds)
}
