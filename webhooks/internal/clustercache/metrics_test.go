package clustercache

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// failLists makes the fake metadata client's lists of Kustomizations fail
// with what err returns, while it returns an error.
func failLists(c *Cache, err func() error) {
	c.meta.(*metadatafake.FakeMetadataClient).PrependReactor("list", kustomizations.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		if e := err(); e != nil {
			return true, nil, e
		}
		return false, nil, nil
	})
}

const watchedKindsHeader = `# HELP steward_watched_kinds Kinds a rule follows through the cluster cache, by the version watched and state (synced, syncing, forbidden); a kind the cluster does not serve has no series.
# TYPE steward_watched_kinds gauge
`

func TestSetCollectorReportsEachWatchedKindAtItsVersion(t *testing.T) {
	disco := &fakeDiscovery{}
	disco.serve(nil, pods)
	c, set := newTestCache(t, disco, kustomization("v1beta2", "apps", "web", "v1beta2"), kustomization("v1", "apps", "web", "v1"))
	start(t, c)
	eventually(t, "ready without the CRD", func() bool { return set.Ready(nil) == nil })
	if err := testutil.CollectAndCompare(set.Collector(), strings.NewReader("")); err != nil {
		t.Errorf("a kind that is not served has no series: %v", err)
	}

	disco.serve(nil, kustomizationsAt("v1beta2"))
	c.trigger()
	eventually(t, "synced at v1beta2", func() bool { return set.Watched()[kustomizations.WithVersion("v1beta2")] == StateSynced })
	want := watchedKindsHeader + `steward_watched_kinds{group="kustomize.toolkit.fluxcd.io",resource="kustomizations",rule="test",state="synced",version="v1beta2"} 1
`
	if err := testutil.CollectAndCompare(set.Collector(), strings.NewReader(want)); err != nil {
		t.Error(err)
	}

	disco.serve(nil, kustomizationsAt("v1"), kustomizationsAt("v1beta2"))
	c.trigger()
	eventually(t, "the series follows the informer to v1", func() bool {
		return testutil.CollectAndCompare(set.Collector(), strings.NewReader(strings.ReplaceAll(want, "v1beta2", "v1"))) == nil
	})

	// The CRD is deleted, or its only served version removed: nothing
	// watches it, and readiness does not change.
	disco.serve(nil, pods)
	c.trigger()
	eventually(t, "the series goes with the informer", func() bool { return testutil.CollectAndCompare(set.Collector(), strings.NewReader("")) == nil })
	if err := set.Ready(nil); err != nil {
		t.Errorf("a kind no longer served must not make the Set unready: %v", err)
	}
}

func TestSetForbiddenKindIsReportedWithoutHoldingReadiness(t *testing.T) {
	disco := &fakeDiscovery{}
	disco.serve(nil, kustomizationsAt("v1"))
	c, set := newTestCache(t, disco, kustomization("v1", "apps", "web", "v1"))
	var forbidden atomic.Bool
	forbidden.Store(true)
	failLists(c, func() error {
		if forbidden.Load() {
			return apierrors.NewForbidden(kustomizations, "", errors.New("RBAC: not granted"))
		}
		return nil
	})
	start(t, c)
	gvr := kustomizations.WithVersion("v1")
	eventually(t, "the kind is forbidden", func() bool { return set.Watched()[gvr] == StateForbidden })
	if err := set.Ready(nil); err != nil {
		t.Errorf("a kind Steward may not list must not keep it unready (the metric says so): %v", err)
	}
	want := watchedKindsHeader + `steward_watched_kinds{group="kustomize.toolkit.fluxcd.io",resource="kustomizations",rule="test",state="forbidden",version="v1"} 1
`
	if err := testutil.CollectAndCompare(set.Collector(), strings.NewReader(want)); err != nil {
		t.Error(err)
	}

	forbidden.Store(false) // RBAC granted: the informer's next list goes through
	eventually(t, "synced once granted", func() bool { return set.Watched()[gvr] == StateSynced })
	if note(set, "apps", "web") != "v1" {
		t.Error("synced, but the object is not found")
	}
}

func TestSetKindInstalledAgainDoesNotHoldReadinessAndFailingListsAreSyncing(t *testing.T) {
	disco := &fakeDiscovery{}
	disco.serve(nil, kustomizationsAt("v1"))
	c, set := newTestCache(t, disco, kustomization("v1", "apps", "web", "v1"))
	var failing atomic.Bool
	failLists(c, func() error {
		if failing.Load() {
			return apierrors.NewInternalError(errors.New("etcd unavailable"))
		}
		return nil
	})
	start(t, c)
	eventually(t, "ready once synced", func() bool { return set.Ready(nil) == nil })

	disco.serve(nil, pods)
	c.trigger()
	eventually(t, "the informer stops with the CRD", func() bool { return len(set.Watched()) == 0 })
	failing.Store(true)
	disco.serve(nil, kustomizationsAt("v1"))
	c.trigger()
	gvr := kustomizations.WithVersion("v1")
	eventually(t, "the new informer is watched", func() bool { return set.Watched()[gvr] == StateSyncing })
	if err := set.Ready(nil); err != nil {
		t.Errorf("an informer started after start-up must not hold readiness: %v", err)
	}
	if _, ok := set.Get(kustomizations, "apps", "web"); ok {
		t.Error("an informer that never synced must not answer")
	}
	failing.Store(false)
	eventually(t, "synced once lists go through", func() bool { return set.Watched()[gvr] == StateSynced })
}

func TestSetReadinessWaitsForAKindServedAtStartThatFails(t *testing.T) {
	disco := &fakeDiscovery{}
	disco.serve(nil, kustomizationsAt("v1"))
	c, set := newTestCache(t, disco)
	failLists(c, func() error { return apierrors.NewInternalError(errors.New("etcd unavailable")) })
	start(t, c)
	gvr := kustomizations.WithVersion("v1")
	eventually(t, "the informer runs", func() bool { return set.Watched()[gvr] == StateSyncing })
	if err := set.Ready(nil); err == nil {
		t.Fatal("a kind served at start-up that has not synced must hold readiness (for up to a minute)")
	}
	// Its informer started more than readyWithin ago.
	set.mu.Lock()
	set.atStart[kustomizations].started = set.atStart[kustomizations].started.Add(-readyWithin)
	set.mu.Unlock()
	if err := set.Ready(nil); err != nil {
		t.Errorf("a kind that keeps failing holds readiness back for %v at most: %v", readyWithin, err)
	}
}

func TestSetReportsAMoveToAVersionItCannotList(t *testing.T) {
	disco := &fakeDiscovery{}
	disco.serve(nil, kustomizationsAt("v1beta2"))
	c, set := newTestCache(t, disco, kustomization("v1beta2", "apps", "web", "v1beta2"))
	c.meta.(*metadatafake.FakeMetadataClient).PrependReactor("list", kustomizations.Resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Version == "v1" {
			return true, nil, apierrors.NewInternalError(errors.New("conversion webhook unavailable"))
		}
		return false, nil, nil
	})
	start(t, c)
	eventually(t, "synced at v1beta2", func() bool { return set.Ready(nil) == nil && note(set, "apps", "web") == "v1beta2" })

	disco.serve(nil, kustomizationsAt("v1"), kustomizationsAt("v1beta2"))
	c.trigger()
	want := watchedKindsHeader + `steward_watched_kinds{group="kustomize.toolkit.fluxcd.io",resource="kustomizations",rule="test",state="synced",version="v1beta2"} 1
steward_watched_kinds{group="kustomize.toolkit.fluxcd.io",resource="kustomizations",rule="test",state="syncing",version="v1"} 1
`
	eventually(t, "both versions are reported", func() bool {
		return testutil.CollectAndCompare(set.Collector(), strings.NewReader(want)) == nil
	})
	if note(set, "apps", "web") != "v1beta2" || set.Ready(nil) != nil {
		t.Error("the old version must keep answering, and the Set ready, while the new one cannot sync")
	}
}

// TestAcceptingQueueCountsWhatReachesTheStore: a list (Replace), and a
// watch's object or bookmark, each tell the Watch that the API server
// answered; nothing else reaches the queue (a watch's error goes to the
// watch error handler).
func TestAcceptingQueueCountsWhatReachesTheStore(t *testing.T) {
	var oks atomic.Int32
	q := newQueue("test", cache.DeletionHandlingMetaNamespaceKeyFunc, nil, func() { oks.Add(1) })
	obj := kustomization("v1", "apps", "web", "")
	for _, f := range []func() error{
		func() error { return q.Replace(nil, "1") },
		func() error { return q.Add(obj) },
		func() error { return q.Update(obj) },
		func() error { return q.Delete(obj) },
		func() error { return q.Bookmark("2") },
	} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	if oks.Load() != 5 {
		t.Errorf("accepted %d times, want 5", oks.Load())
	}
}
