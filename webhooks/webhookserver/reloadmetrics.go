package webhookserver

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// reloadMetrics report the configuration file's reloads, named as
// Prometheus and Alertmanager name theirs, so the same alerts and
// dashboards carry over. Each server has its own, registered with the
// registry it serves.
type reloadMetrics struct {
	successful  prometheus.Gauge
	successTime prometheus.Gauge
	reloads     *prometheus.CounterVec
}

// Results of a reload, the values of steward_config_reloads_total's
// result label.
const (
	reloadSuccess = "success"
	reloadFailure = "failure"
)

func newReloadMetrics() *reloadMetrics {
	m := &reloadMetrics{
		successful: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "steward_config_last_reload_successful",
			Help: "Whether the last attempt to load the configuration file succeeded (1) or was refused, keeping the last good configuration (0).",
		}),
		successTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "steward_config_last_reload_success_timestamp_seconds",
			Help: "When the configuration in effect was loaded, at start-up or by a reload, in seconds since the epoch.",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "steward_config_reloads_total",
			Help: "Reloads of a changed configuration file since start-up, by result (success, failure).",
		}, []string{"result"}),
	}
	// Both series exist from the start, so rate() and increase() see the
	// first failure.
	m.reloads.WithLabelValues(reloadSuccess)
	m.reloads.WithLabelValues(reloadFailure)
	return m
}

// loaded records a configuration taking effect at t. The load at
// start-up is not a reload and is not counted.
func (m *reloadMetrics) loaded(t time.Time) {
	m.successful.Set(1)
	m.successTime.Set(float64(t.UnixNano()) / 1e9)
}

// reloaded records a changed file that took effect at t.
func (m *reloadMetrics) reloaded(t time.Time) {
	m.loaded(t)
	m.reloads.WithLabelValues(reloadSuccess).Inc()
}

// failed records a changed file that was refused.
func (m *reloadMetrics) failed() {
	m.successful.Set(0)
	m.reloads.WithLabelValues(reloadFailure).Inc()
}

// Describe implements prometheus.Collector.
func (m *reloadMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.successful.Describe(ch)
	m.successTime.Describe(ch)
	m.reloads.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *reloadMetrics) Collect(ch chan<- prometheus.Metric) {
	m.successful.Collect(ch)
	m.successTime.Collect(ch)
	m.reloads.Collect(ch)
}
