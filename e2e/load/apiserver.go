package main

import (
	"context"

	dto "github.com/prometheus/client_model/go"
)

// matchCost is how long the API server spent evaluating one webhook's
// matchConditions when they excluded a request, over the whole run.
type matchCost struct {
	Webhook   string  `json:"webhook"`
	Exclusion float64 `json:"exclusions"`
	Seconds   float64 `json:"seconds"`
}

// MeanMicros is the mean time per excluded request, in µs.
func (m matchCost) MeanMicros() float64 {
	if m.Exclusion == 0 {
		return 0
	}
	return m.Seconds / m.Exclusion * 1e6
}

const matchConditionMetric = "apiserver_admission_match_condition_evaluation_seconds"

// readMatchCosts reads the API server's own histogram of match-condition
// evaluations: it records one observation for each request a webhook's
// conditions kept from the webhook (what the agent workloads are about),
// timing the preparation of the CEL activation and every expression.
func (c *cluster) readMatchCosts(ctx context.Context) ([]matchCost, error) {
	families, err := c.env.APIServerMetrics(ctx)
	if err != nil {
		return nil, err
	}
	return matchCosts(families), nil
}

// matchCosts sums the histogram's sums and counts per webhook name (over
// operations and kinds), in the order the webhooks first appear.
func matchCosts(families map[string]*dto.MetricFamily) []matchCost {
	var out []matchCost
	at := map[string]int{}
	for _, m := range families[matchConditionMetric].GetMetric() {
		name := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" {
				name = l.GetValue()
			}
		}
		if name == "" || m.GetHistogram() == nil {
			continue
		}
		i, ok := at[name]
		if !ok {
			i, at[name] = len(out), len(out)
			out = append(out, matchCost{Webhook: name})
		}
		out[i].Seconds += m.GetHistogram().GetSampleSum()
		out[i].Exclusion += float64(m.GetHistogram().GetSampleCount())
	}
	return out
}
