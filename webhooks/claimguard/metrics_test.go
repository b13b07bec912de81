package claimguard

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCacheMetricsFollowTheCachesBetweenSnapshots proves the gauges are
// read at the scrape: a cache that syncs and grows after its snapshot was
// taken shows it at the next scrape, without a new snapshot.
func TestCacheMetricsFollowTheCachesBetweenSnapshots(t *testing.T) {
	s := newCluster().managed(rdsGK, rdsGVR, false, stateSyncing, mr("db-1")).s
	var synced atomic.Bool
	s.all[0].synced = synced.Load
	s.ignoredXRDs = 2
	r := New(Config{})
	r.found.snap.Store(s)
	m := r.Collector()

	check := func(when string, syncing, syncedKinds, objects int) {
		t.Helper()
		want := fmt.Sprintf(`# HELP steward_claimguard_cached_objects Objects in claimguard's caches, by role (composite, managed).
# TYPE steward_claimguard_cached_objects gauge
steward_claimguard_cached_objects{role="composite"} 0
steward_claimguard_cached_objects{role="managed"} %d
# HELP steward_claimguard_ignored_xrds CompositeResourceDefinitions claimguard ignores because their kinds are not Crossplane's to compose (a Kubernetes group, or a kind not served by Crossplane's CRD).
# TYPE steward_claimguard_ignored_xrds gauge
steward_claimguard_ignored_xrds 2
# HELP steward_claimguard_watched_kinds Kinds claimguard caches, by role (composite, managed) and state (synced, syncing, forbidden).
# TYPE steward_claimguard_watched_kinds gauge
steward_claimguard_watched_kinds{role="composite",state="forbidden"} 0
steward_claimguard_watched_kinds{role="composite",state="synced"} 0
steward_claimguard_watched_kinds{role="composite",state="syncing"} 0
steward_claimguard_watched_kinds{role="managed",state="forbidden"} 0
steward_claimguard_watched_kinds{role="managed",state="synced"} %d
steward_claimguard_watched_kinds{role="managed",state="syncing"} %d
`, objects, syncedKinds, syncing)
		if err := testutil.CollectAndCompare(m, strings.NewReader(want)); err != nil {
			t.Errorf("%s: %v", when, err)
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

// TestEveryRuleReportsItsOwnCaches proves two claimguards in one process
// keep their metrics apart: each reports its own snapshot, and each
// registers with a registry of its own without colliding with the other.
func TestEveryRuleReportsItsOwnCaches(t *testing.T) {
	one, two := New(Config{}), New(Config{})
	one.found.snap.Store(newCluster().managed(rdsGK, rdsGVR, false, stateSynced, mr("db-1"), mr("db-2")).s)
	two.found.snap.Store(newCluster().managed(rdsGK, rdsGVR, false, stateSynced, mr("db-3")).s)
	for _, tc := range []struct {
		rule *Rule
		want float64
	}{{one, 2}, {two, 1}} {
		reg := prometheus.NewPedanticRegistry()
		if err := reg.Register(tc.rule.Collector()); err != nil {
			t.Fatal(err)
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var got float64
		for _, f := range families {
			if f.GetName() != "steward_claimguard_cached_objects" {
				continue
			}
			for _, m := range f.GetMetric() {
				got += m.GetGauge().GetValue()
			}
		}
		if got != tc.want {
			t.Errorf("steward_claimguard_cached_objects = %v, want %v: the rule's own caches", got, tc.want)
		}
	}
}
