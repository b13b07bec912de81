package apimigration

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stewardhq/steward/webhooks/rule"
)

// targetInfo reports the target release of the rule in use at each
// scrape, so exactly one series exists: the current one, also after a
// reloaded configuration pins or unpins it.
type targetInfo struct {
	desc *prometheus.Desc
	view *view
}

// Collector reports the target release as
// steward_apimigration_target_info{flux_version,source} = 1; the server
// registers it with the registry it serves.
func (r *Rule) Collector() prometheus.Collector {
	return &targetInfo{
		view: r.view,
		desc: prometheus.NewDesc("steward_apimigration_target_info",
			"The Flux release apimigration decides against (1), or the releases the cluster's Flux CRDs may belong to when they cannot tell (\"2.8 to 2.10\": decided against the oldest), and where it came from: config (pinned by rules.apimigration.fluxVersion), cluster-label (the Flux CRDs' app.kubernetes.io/version), served-versions (inferred from the Flux CRDs: the versions they serve and mark deprecated, and the fields their schemas have) or default (no Flux CRDs).",
			[]string{"flux_version", "source"}, nil),
	}
}

var _ rule.MetricsCollector = (*Rule)(nil)

func (m *targetInfo) Describe(ch chan<- *prometheus.Desc) { ch <- m.desc }

func (m *targetInfo) Collect(ch chan<- prometheus.Metric) {
	t := m.view.inUse.Load().Target()
	ch <- prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, 1, t.Name(), string(t.Source))
}
