package claimguard

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

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
	m := &cacheMetrics{kinds: claimguardMetrics.kinds, objects: claimguardMetrics.objects, ignored: claimguardMetrics.ignored}
	m.last.Store(s)

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
