package clustercache

import (
	"github.com/prometheus/client_golang/prometheus"
)

// WatchedKindsMetric is the metric of every Set's informers. claimguard,
// whose kinds are open-ended (every managed resource kind of every
// provider), counts its own by role and state in
// steward_claimguard_watched_kinds instead.
const WatchedKindsMetric = "steward_watched_kinds"

// setMetrics reports one Set's informers when scraped.
type setMetrics struct {
	desc *prometheus.Desc
	set  *Set
}

// Collector reports the Set's informers as
// steward_watched_kinds{rule,group,resource,version,state} = 1, one series
// per informer: the version it watches and its state now (synced, syncing,
// forbidden). A resource has one, or two while an upgrade moves its
// informer to another version (the old one answers until the new one has
// synced). A resource that is not
// served has no series: nothing watches it, and nothing needs to. The
// rule label is the Set's name, a constant label, so every rule's Set
// registers its own collector with the registry Steward serves and none
// is shared. A nil Set (a rule that was never set up) reports nothing.
func (s *Set) Collector() prometheus.Collector {
	name := ""
	if s != nil {
		name = s.name
	}
	return &setMetrics{
		set: s,
		desc: prometheus.NewDesc(WatchedKindsMetric,
			"Kinds a rule follows through the cluster cache, by the version watched and state (synced, syncing, forbidden); a kind the cluster does not serve has no series.",
			[]string{"group", "resource", "version", "state"}, prometheus.Labels{"rule": name}),
	}
}

func (m *setMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.desc }

func (m *setMetrics) Collect(ch chan<- prometheus.Metric) {
	if m.set == nil {
		return
	}
	for gvr, st := range m.set.Watched() {
		ch <- prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, 1, gvr.Group, gvr.Resource, gvr.Version, string(st))
	}
}
