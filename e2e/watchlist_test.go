package e2e

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/stewardhq/steward/e2e/harness"
)

// serverStreamsLists says whether the API server streams a list through a
// watch (WatchList: sendInitialEvents). Kubernetes 1.32 and later do by
// default; older releases refuse the request as invalid unless their
// WatchList feature gate is on. client-go then falls back to LIST.
func serverStreamsLists(ctx context.Context, t *testing.T) bool {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: legacyDBGVK.Group, Version: legacyDBGVK.Version, Resource: "databases"}
	w, err := dyn.Resource(gvr).Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	switch {
	case err == nil:
		w.Stop()
		return true
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		t.Logf("the API server does not stream lists: %v", err)
		return false
	default:
		t.Fatalf("asking the API server for a streamed list: %v", err)
		return false
	}
}

// TestStartUpWithWatchListOnAndOff starts Steward with client-go's
// WatchList off (KUBE_FEATURE_WatchListClient=false) and on (client-go's
// default), and proves each time that it becomes ready and decides from
// what its first list brought into its caches: an MR with the external
// name of one that was already deleting before Steward started is refused,
// one with another name is allowed. The API server's metrics show which
// way claimguard filled its cache of Databases: with WatchList on a
// streamed list where the server streams (Kubernetes 1.32 and later),
// LISTs where it does not (older releases refuse the stream, and Steward
// lists in pages instead); with WatchList off, LISTs only.
func TestStartUpWithWatchListOnAndOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	keepStewardRunning(t)
	restoreDefaultSteward(t)
	streams := serverStreamsLists(ctx, t)

	// Deleting before Steward starts, held by its provider's finalizer:
	// only a start-up list brings it into claimguard's cache.
	const old, extName = "db-wl7k2-abcde", "e2e-watchlist-db"
	t.Cleanup(func() { dropFinalizers(t, context.Background(), legacyDBGVK, "", old) })
	kubectlOK(t, ctx, composedDB(old, "database.example.org/v1alpha1", "XPostgreSQLInstance", "db-wl7k2", "3f1c7a52-9d0e-4b8a-a6e2-5c4d8b7f1e90", extName, "", false),
		"--as", crossplaneUser, "create", "-f", "-")
	kubectlOK(t, ctx, "", "delete", "databases.postgresql.sql.crossplane.io", old, "--wait=false")
	newMR := func(ext string) string {
		return composedDB("db-wl9m4-xyz", "database.example.org/v1alpha1", "XPostgreSQLInstance", "db-wl9m4", "8b2e6d14-7c3a-4f59-9e01-d4a7c6b3f285", ext, "", false)
	}

	for _, watchList := range []bool{false, true} {
		lists, streamed := databaseLists(ctx, t)
		begin := time.Now()
		opts := harness.StewardOptions{Config: harness.DefaultConfig, ProvideCerts: true}
		if !watchList {
			opts.Env = []string{"KUBE_FEATURE_WatchListClient=false"}
		}
		if _, err := env.RestartStewardWith(ctx, opts); err != nil {
			t.Fatalf("WatchList %v: starting Steward: %v", watchList, err)
		}
		listsAfter, streamedAfter := databaseLists(ctx, t)
		listed, streamedNow := listsAfter-lists, streamedAfter-streamed
		t.Logf("WatchList %v: ready in %s after %.0f LISTs and %.0f streamed lists of Databases (the server streams lists: %v)",
			watchList, time.Since(begin).Round(time.Millisecond), listed, streamedNow, streams)
		switch {
		case watchList && streams && (streamedNow < 1 || listed > 0):
			t.Errorf("WatchList on, against a server that streams: want only the streamed list")
		case (!watchList || !streams) && (listed < 1 || streamedNow > 0):
			t.Errorf("WatchList %v, the server streams lists: %v: want only LISTs", watchList, streams)
		}

		refusedBy(t, ctx, claimguardManagedHook, newMR(extName), []string{"--as", crossplaneUser, "create", "--dry-run=server", "-f", "-"},
			`claimguard: Database db-wl9m4-xyz with external name "`+extName+`" cannot be created yet: Database `+old)
		kubectlOK(t, ctx, newMR("e2e-watchlist-other"), "--as", crossplaneUser, "create", "--dry-run=server", "-f", "-")
	}
}
