package main

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"
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
	body, err := c.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseMatchCosts(body), nil
}

// parseMatchCosts sums the histogram's _sum and _count per webhook name
// (over operations and kinds) from the Prometheus text format.
func parseMatchCosts(body []byte) []matchCost {
	byName := map[string]*matchCost{}
	var order []string
	s := bufio.NewScanner(bytes.NewReader(body))
	s.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for s.Scan() {
		line := s.Text()
		isSum := strings.HasPrefix(line, matchConditionMetric+"_sum{")
		isCount := strings.HasPrefix(line, matchConditionMetric+"_count{")
		if !isSum && !isCount {
			continue
		}
		name := label(line, "name")
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if name == "" || sp < 0 || err != nil {
			continue
		}
		m := byName[name]
		if m == nil {
			m = &matchCost{Webhook: name}
			byName[name] = m
			order = append(order, name)
		}
		if isSum {
			m.Seconds += v
		} else {
			m.Exclusion += v
		}
	}
	out := make([]matchCost, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out
}

// label returns a label's value in a Prometheus text-format line.
func label(line, name string) string {
	i := strings.Index(line, name+`="`)
	if i < 0 {
		return ""
	}
	rest := line[i+len(name)+2:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return rest[:j]
}
