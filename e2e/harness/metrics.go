package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// metricsClient reads Steward's metrics endpoint, whose certificate is
// self-signed (Prometheus scrapes it with insecureSkipVerify, as
// kubebuilder's ServiceMonitor does: the token is what is checked).
var metricsClient = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed; see above
}}

// MetricsRequest GETs Steward's /metrics as Prometheus does, with the
// harness's service account token, asking for the given format ("" for
// the text format).
func (s *Steward) MetricsRequest(accept string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, s.MetricsURL(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.metricsToken)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	return metricsClient.Do(req)
}

// MetricsText returns Steward's Prometheus metrics in the text format.
func (s *Steward) MetricsText() (string, error) {
	resp, err := s.MetricsRequest("")
	if err != nil {
		return "", fmt.Errorf("reading steward's metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("reading steward's metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("reading steward's metrics: %s: %s", resp.Status, body)
	}
	return string(body), nil
}

// Counter returns the sum of the samples of metric name whose labels include
// every label in labels (all of its samples when labels is empty), e.g.
//
//	s.Counter("steward_decisions_total", map[string]string{"rule": "fleetguard", "decision": "denied"})
//	s.Counter("controller_runtime_webhook_requests_total", map[string]string{"webhook": "/validate/fleetguard"})
//
// A metric that was never incremented is 0: vector metrics have no samples
// until their first use. Histograms and summaries count observations.
func (s *Steward) Counter(name string, labels map[string]string) (float64, error) {
	text, err := s.MetricsText()
	if err != nil {
		return 0, err
	}
	return sumSamples(text, name, labels)
}

// sumSamples implements Counter over a metrics text.
func sumSamples(text, name string, labels map[string]string) (float64, error) {
	families, err := ParseMetrics(text)
	if err != nil {
		return 0, fmt.Errorf("parsing steward's metrics: %w", err)
	}
	return SumFamilies(families, name, labels), nil
}

// ParseMetrics reads metric families in the Prometheus text format.
func ParseMetrics(text string) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(text))
}

// APIServerMetrics reads the API server's own /metrics.
func (e *Env) APIServerMetrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return nil, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	families, err := ParseMetrics(string(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's metrics: %w", err)
	}
	return families, nil
}

// SumFamilies is Counter over metric families already read, in any of the
// Prometheus formats.
func SumFamilies(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	var sum float64
	for _, m := range families[name].GetMetric() {
		if !HasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		case m.Summary != nil:
			sum += float64(m.Summary.GetSampleCount())
		}
	}
	return sum
}

// HasLabels says whether a sample carries every label in want.
func HasLabels(m *dto.Metric, want map[string]string) bool {
	have := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
