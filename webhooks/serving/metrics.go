package serving

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// Metrics are the decision metrics every wrapped rule records: how many
// requests each rule answered, by outcome, and how long it took to
// decide. The server registers them with the registry it serves /metrics
// from, like every other collector; nothing is registered globally.
type Metrics struct {
	// decisions counts every request a rule answers, by outcome.
	decisions *prometheus.CounterVec
	// seconds is the time a rule takes to decide, from the decoded
	// request to the answer, without reading the body or writing the
	// answer (controller-runtime's controller_runtime_webhook_latency_seconds
	// covers the whole HTTP exchange). It tells a slow rule, e.g. one
	// whose cache lookups grew with the cluster, from a slow network or a
	// busy node. Classic buckets from 25 µs to 2.5 s serve any
	// Prometheus; the native buckets (about 10% wide) give exact
	// percentiles where it reads them.
	seconds *prometheus.HistogramVec
}

// NewMetrics returns unregistered decision metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "steward_decisions_total",
			Help: "Admission decisions made by Steward, by rule and outcome.",
		}, []string{"rule", "decision"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                            "steward_decision_duration_seconds",
			Help:                            "Time Steward's rules take to decide an admission request, by rule.",
			Buckets:                         prometheus.ExponentialBuckets(25e-6, 4, 10),
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}, []string{"rule"}),
	}
}

// Describe sends the metrics' descriptions.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.decisions.Describe(ch)
	m.seconds.Describe(ch)
}

// Collect sends the metrics.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.decisions.Collect(ch)
	m.seconds.Collect(ch)
}
