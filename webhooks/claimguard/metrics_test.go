package claimguard

import (
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestCacheMetricsFollowTheCachesBetweenSnapshots proves the gauges are
// read at the scrape: a cache that syncs and grows after its snapshot was
// taken shows it at the next scrape, without a new snapshot.
func TestCacheMetricsFollowTheCachesBetweenSnapshots(t *testing.T) {
	s := newCluster().managed(rdsGK, rdsGVR, false, stateSyncing, mr("db-1")).s
	var synced atomic.Bool
	s.all[0].synced = synced.Load
	m := &cacheMetrics{kinds: claimguardMetrics.kinds, objects: claimguardMetrics.objects}
	m.last.Store(s)

	check := func(when string, syncing, syncedKinds, objects float64) {
		t.Helper()
		got := gather(t, m)
		if got[`steward_claimguard_watched_kinds{role="managed",state="syncing"}`] != syncing ||
			got[`steward_claimguard_watched_kinds{role="managed",state="synced"}`] != syncedKinds ||
			got[`steward_claimguard_cached_objects{role="managed"}`] != objects {
			t.Errorf("%s: got %v; want %v kinds syncing, %v synced, %v objects", when, got, syncing, syncedKinds, objects)
		}
	}
	check("at the snapshot", 1, 0, 1)
	synced.Store(true)
	for _, name := range []string{"db-2", "db-3"} {
		if err := s.all[0].indexer.Add(mr(name)); err != nil {
			t.Fatal(err)
		}
	}
	check("after the cache synced and grew", 0, 1, 3)
}

// gather collects c and returns each sample as name{labels} -> value.
func gather(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			out[f.GetName()+labels(m)] = m.GetGauge().GetValue()
		}
	}
	return out
}

func labels(m *dto.Metric) string {
	s := "{"
	for i, l := range m.GetLabel() {
		if i > 0 {
			s += ","
		}
		s += l.GetName() + `="` + l.GetValue() + `"`
	}
	return s + "}"
}
