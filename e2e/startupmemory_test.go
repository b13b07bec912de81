package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// startupObjects is how many objects of each kind the start-up memory
// test seeds: managed resources (metadata cached by claimguard), Flux
// Kustomizations (metadata, suspendnotice), InstallPlans (whole objects,
// trimmed, installplanguard) and Fleet-deployed Deployments (metadata,
// fleetguard through the manager's cache). Enough that what an informer
// would hold untransformed dwarfs Steward's own footprint, few enough to
// seed in well under a minute. E2E_STARTUP_SCALE multiplies them, to
// measure a larger cluster by hand (E2E_STARTUP_SCALE=7 is 63,000).
var startupObjects = func() map[string]int {
	m := map[string]int{"Database": 4000, "Kustomization": 2000, "InstallPlan": 2000, "Deployment": 1000}
	if f, err := strconv.ParseFloat(os.Getenv("E2E_STARTUP_SCALE"), 64); err == nil && f > 0 {
		for k, n := range m {
			m[k] = int(float64(n) * f)
		}
	}
	return m
}()

// startupPeakRatio is the most Steward's start-up peak may exceed its
// resident memory once its caches have synced.
const startupPeakRatio = 1.25

// TestStartUpPeakMemoryStaysNearSyncedMemory seeds thousands of objects of
// the kinds Steward caches, each the size a real one has (managed fields,
// and the last-applied-configuration annotation kubectl apply writes), and
// starts Steward twice: once listing them the old way
// (KUBE_FEATURE_WatchListClient=false, as against API servers of
// Kubernetes 1.31 and older, which cannot stream a list), once streaming
// them (WatchList). In both, the process's peak resident memory (VmHWM)
// up to readiness must stay within startupPeakRatio of what it holds once
// synced (VmRSS two seconds after readiness), and the list run must hold no more than
// startupPeakRatio of what the streaming run holds: a list read whole
// before the informers trim it would show in either. The API server's
// metrics must show that each run took its path: streamed lists only with
// WatchList, LISTs only without.
func TestStartUpPeakMemoryStaysNearSyncedMemory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if !serverStreamsLists(ctx, t) {
		// Compares the two ways to fill the caches; against a server with
		// one way, TestStartUpWithWatchListOnAndOff proves the fall-back.
		t.Skip("the API server cannot stream lists (WatchList is off by default before Kubernetes 1.32): there is no streamed start-up to compare with")
	}
	keepStewardRunning(t)
	ns := testNamespace(t, ctx, fmt.Sprintf("startup-memory-%d", time.Now().UnixNano()%1_000_000))
	start := time.Now()
	seedStartupObjects(t, ctx, ns)
	t.Logf("seeded %v in %s", startupObjects, time.Since(start).Round(time.Millisecond))

	type run struct {
		peak, synced int64
		ready        time.Duration
	}
	measure := func(watchList bool) run {
		t.Helper()
		t.Setenv("KUBE_FEATURE_WatchListClient", fmt.Sprint(watchList))
		lists, streams := databaseLists(ctx, t)
		begin := time.Now()
		s, err := env.RestartSteward(ctx, harness.DefaultConfig)
		if err != nil {
			t.Fatal(err)
		}
		ready := time.Since(begin)
		// Which way claimguard filled its cache of Databases, from the
		// API server's side: a silent fall-back from streaming to pages
		// would measure the wrong path.
		listsAfter, streamsAfter := databaseLists(ctx, t)
		listed, streamed := listsAfter-lists, streamsAfter-streams
		t.Logf("WatchList %v: Steward's start-up made %.0f LISTs and %.0f streamed lists of Databases", watchList, listed, streamed)
		if watchList && (streamed < 1 || listed > 0) || !watchList && (listed < 1 || streamed > 0) {
			t.Errorf("WatchList %v: want only the %s", watchList, map[bool]string{true: "streamed list", false: "LISTs"}[watchList])
		}
		// What Steward holds once synced is read a moment later: at the
		// instant of readiness it depends on whether a collection has
		// just run.
		time.Sleep(2 * time.Second)
		synced, err := harness.ProcessMemory(s.PID())
		if err != nil {
			t.Fatal(err)
		}
		r := run{peak: s.ReadyPeak(), synced: synced.RSS, ready: ready}
		t.Logf("WatchList %v: ready in %s; peak %.1f MiB, synced %.1f MiB (%.2f×)", watchList, r.ready.Round(time.Millisecond),
			mib(r.peak), mib(r.synced), float64(r.peak)/float64(r.synced))
		if float64(r.peak) > startupPeakRatio*float64(r.synced) {
			t.Errorf("WatchList %v: start-up peak %.1f MiB is over %.2f× the %.1f MiB Steward holds once synced", watchList, mib(r.peak), startupPeakRatio, mib(r.synced))
		}
		return r
	}
	listed := measure(false)
	streamed := measure(true)
	if float64(listed.synced) > startupPeakRatio*float64(streamed.synced) || float64(listed.peak) > startupPeakRatio*float64(streamed.peak) {
		t.Errorf("listing without WatchList: peak %.1f MiB, synced %.1f MiB; streaming: peak %.1f MiB, synced %.1f MiB: listing must cost no more than %.2f× streaming",
			mib(listed.peak), mib(listed.synced), mib(streamed.peak), mib(streamed.synced), startupPeakRatio)
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// databaseLists counts, from the API server's metrics, the LIST requests
// for Databases (one a page) and the watches that streamed their initial
// list to its end (apiserver_watch_list_duration_seconds is recorded at
// the initial-events-end bookmark).
func databaseLists(ctx context.Context, t *testing.T) (lists, streams float64) {
	t.Helper()
	families, err := env.APIServerMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const group = "postgresql.sql.crossplane.io"
	lists = harness.SumFamilies(families, "apiserver_request_total", map[string]string{"group": group, "resource": "databases", "verb": "LIST"})
	streams = harness.SumFamilies(families, "apiserver_watch_list_duration_seconds", map[string]string{"group": group, "resource": "databases"})
	return lists, streams
}

// startupLabel marks the seeded objects, so that cleanup finds them.
const startupLabel = "e2e.steward.dev/startup-memory"

// seedStartupObjects creates startupObjects and removes them when the test
// ends. A namespace is not emptied when deleted here (no namespace
// controller runs), so cleanup deletes the objects themselves.
func seedStartupObjects(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	fleet, err := env.As("system:serviceaccount:cattle-fleet-system:fleet-agent", "system:serviceaccounts", "system:serviceaccounts:cattle-fleet-system")
	if err != nil {
		t.Fatal(err)
	}
	kinds := []struct {
		gvk    schema.GroupVersionKind
		ns     string
		client client.Client
		object func(i int) map[string]any
	}{
		{schema.GroupVersionKind{Group: "postgresql.sql.crossplane.io", Version: "v1alpha1", Kind: "Database"}, "", env.Client, func(i int) map[string]any {
			return map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{"crossplane.io/external-name": fmt.Sprintf("db-%s-%d", ns, i)}},
				"spec": map[string]any{"forProvider": map[string]any{"encoding": "UTF8", "owner": "app", "connectionLimit": int64(100)},
					"providerConfigRef": map[string]any{"name": "default"}, "deletionPolicy": "Delete"},
			}
		}},
		{schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}, ns, env.Client, func(i int) map[string]any {
			return map[string]any{"spec": map[string]any{"interval": "10m", "prune": true, "path": fmt.Sprintf("./apps/team-%d/overlays/production", i),
				"sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet-infra"}, "timeout": "5m", "wait": true}}
		}},
		{schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "InstallPlan"}, ns, env.Client, func(i int) map[string]any {
			return map[string]any{"spec": map[string]any{"approval": "Manual", "approved": false,
				"clusterServiceVersionNames": []any{fmt.Sprintf("operator-%d.v1.2.3", i), fmt.Sprintf("dependency-%d.v0.4.1", i)}}}
		}},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, ns, fleet, func(i int) map[string]any {
			name := fmt.Sprintf("startup-memory-%d", i)
			labels := map[string]any{"app": name}
			return map[string]any{
				"metadata": map[string]any{
					"labels":      map[string]any{"objectset.rio.cattle.io/hash": fmt.Sprintf("%040x", i), "app.kubernetes.io/managed-by": "Helm"},
					"annotations": map[string]any{"objectset.rio.cattle.io/id": "default-startup-memory", "meta.helm.sh/release-name": "startup-memory", "meta.helm.sh/release-namespace": ns},
				},
				"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": labels},
					"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": map[string]any{"containers": []any{
						map[string]any{"name": "app", "image": "registry.example/app:1.2.3", "ports": []any{map[string]any{"containerPort": int64(8080)}}},
					}}}},
			}
		}},
	}
	for _, k := range kinds {
		t.Cleanup(func() {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(k.gvk)
			opts := []client.DeleteAllOfOption{client.MatchingLabels{startupLabel: "true"}}
			if k.ns != "" {
				opts = append(opts, client.InNamespace(k.ns))
			}
			err := k.client.DeleteAllOf(context.Background(), u, opts...)
			switch {
			case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err):
				// Tens of thousands (E2E_STARTUP_SCALE) outlast the
				// request; the API server goes on deleting them.
				t.Logf("removing the seeded %ss goes on after the request timed out", k.gvk.Kind)
			case err != nil:
				t.Errorf("removing the seeded %ss: %v", k.gvk.Kind, err)
			}
		})
		n := startupObjects[k.gvk.Kind]
		work := make(chan int)
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					errs <- k.client.Create(ctx, startupObject(k.gvk, k.ns, fmt.Sprintf("startup-memory-%d", i), k.object(i)))
				}
			}()
		}
		for i := range n {
			work <- i
		}
		close(work)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("seeding %ss: %v", k.gvk.Kind, err)
			}
		}
	}
}

// startupObject is an object as kubectl apply leaves it: with the
// last-applied-configuration annotation, a copy of the object itself.
func startupObject(gvk schema.GroupVersionKind, ns, name string, content map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	u.SetNamespace(ns)
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[startupLabel] = "true"
	u.SetLabels(labels)
	applied, _ := json.Marshal(u.Object)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["kubectl.kubernetes.io/last-applied-configuration"] = strings.TrimSpace(string(applied))
	u.SetAnnotations(annotations)
	return u
}
