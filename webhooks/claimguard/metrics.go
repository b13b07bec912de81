package claimguard

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stewardhq/steward/webhooks/rule"
)

// cacheMetrics reports one claimguard's caches when scraped, from its
// latest snapshot: a watch syncs, loses its permission and gains or loses
// objects between snapshots, which are taken only when XRDs or CRDs change
// (or every few minutes), so values set at snapshot time would lag behind.
type cacheMetrics struct {
	kinds   *prometheus.Desc
	objects *prometheus.Desc
	ignored *prometheus.Desc
	// last returns the latest snapshot, nil before the first discovery.
	last func() *snapshot
}

// Collector reports this rule's caches; the server registers it with the
// registry it serves, so every Rule has metrics of its own.
func (r *Rule) Collector() prometheus.Collector { return newCacheMetrics(r.found.snap.Load) }

var _ rule.MetricsCollector = (*Rule)(nil)

func newCacheMetrics(last func() *snapshot) *cacheMetrics {
	return &cacheMetrics{
		last: last,
		// An alert can fire on kinds claimguard cannot list (state "forbidden")
		// or that never sync; requests for those are allowed with a warning or
		// refused.
		kinds: prometheus.NewDesc("steward_claimguard_watched_kinds",
			"Kinds claimguard caches, by role (composite, managed) and state (synced, syncing, forbidden).",
			[]string{"role", "state"}, nil),
		objects: prometheus.NewDesc("steward_claimguard_cached_objects",
			"Objects in claimguard's caches, by role (composite, managed).",
			[]string{"role"}, nil),
		// An XRD that names a Kubernetes group or another project's CRD is
		// ignored and logged; an alert on this tells someone tried.
		ignored: prometheus.NewDesc("steward_claimguard_ignored_xrds",
			"CompositeResourceDefinitions claimguard ignores because their kinds are not Crossplane's to compose (a Kubernetes group, or a kind not served by Crossplane's CRD).",
			nil, nil),
	}
}

var stateNames = map[state]string{stateSynced: "synced", stateSyncing: "syncing", stateForbidden: "forbidden"}

func (m *cacheMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.kinds
	ch <- m.objects
	ch <- m.ignored
}

// Collect reads the kinds' states and object counts at the scrape; the
// counts are kept from the informers' events, so a scrape costs nothing per
// cached object.
func (m *cacheMetrics) Collect(ch chan<- prometheus.Metric) {
	kinds := map[[2]string]int{}
	objects := map[role]int{}
	ignored := 0
	if s := m.last(); s != nil {
		ignored = s.ignoredXRDs
		for _, w := range s.all {
			kinds[[2]string{string(w.role), stateNames[w.state()]}]++
			objects[w.role] += w.objects()
		}
	}
	for _, r := range []role{roleComposite, roleManaged} {
		for _, st := range stateNames {
			ch <- prometheus.MustNewConstMetric(m.kinds, prometheus.GaugeValue, float64(kinds[[2]string{string(r), st}]), string(r), st)
		}
		ch <- prometheus.MustNewConstMetric(m.objects, prometheus.GaugeValue, float64(objects[r]), string(r))
	}
	ch <- prometheus.MustNewConstMetric(m.ignored, prometheus.GaugeValue, float64(ignored))
}
