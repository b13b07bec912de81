package ruletest

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/stewardhq/steward/webhooks/serving"
)

// DecisionCount reads steward_decisions_total{rule, decision} from m, as
// a scrape would.
func DecisionCount(m *serving.Metrics, ruleName string, d serving.Decision) float64 {
	for _, m := range samples(m, "steward_decisions_total", map[string]string{"rule": ruleName, "decision": string(d)}) {
		return m.GetCounter().GetValue()
	}
	return 0
}

// DecisionTimes reads how many decisions of a rule
// steward_decision_duration_seconds holds in m and their summed seconds.
func DecisionTimes(m *serving.Metrics, ruleName string) (count uint64, seconds float64) {
	for _, m := range samples(m, "steward_decision_duration_seconds", map[string]string{"rule": ruleName}) {
		return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
	}
	return 0, 0
}

// samples are the samples of the named family in c whose labels are
// labels.
func samples(c prometheus.Collector, name string, labels map[string]string) []*dto.Metric {
	reg := prometheus.NewPedanticRegistry()
	if reg.Register(c) != nil {
		return nil
	}
	families, err := reg.Gather()
	if err != nil {
		return nil
	}
	var out []*dto.Metric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				out = append(out, m)
			}
		}
	}
	return out
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}
