package audit

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// resultsGauge is one series of steward_audit_results, as a collector
// testutil.ToFloat64 reads.
func resultsGauge(m *Metrics, ruleName, result string) prometheus.Collector {
	return collectorFunc(func(ch chan<- prometheus.Metric) {
		all := make(chan prometheus.Metric, 100)
		m.Collect(all)
		close(all)
		for metric := range all {
			if metric.Desc() != m.results {
				continue
			}
			var labels = map[string]string{}
			d := dtoOf(metric)
			for _, l := range d.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["rule"] == ruleName && labels["result"] == result {
				ch <- metric
			}
		}
	})
}

type collectorFunc func(chan<- prometheus.Metric)

func (f collectorFunc) Describe(chan<- *prometheus.Desc)    {}
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }

func dtoOf(m prometheus.Metric) *dto.Metric {
	var d dto.Metric
	_ = m.Write(&d)
	return &d
}
