//go:build extended

// The scenario needs Flux 2.7's helm-controller, whose build make test
// leaves out to keep a fresh machine's CI run short: it runs under the build
// tag extended, through make e2e-extended.

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// realMigrationName names the repository, GitRepository and Kustomization
// of TestRealFluxDeprecatedHelmRelease, and the namespace its HelmRelease
// hello installs the chart into.
const realMigrationName = "realflux-migration"

// realMigrationFiles are the repository's files: a chart whose one
// ConfigMap carries the value color, and a HelmRelease of it written
// through helm.toolkit.fluxcd.io/v2beta2 (a manifest nobody migrated)
// setting color.
func realMigrationFiles(color string) map[string]string {
	return map[string]string{
		"charts/hello/Chart.yaml":  "apiVersion: v2\nname: hello\nversion: 0.1.0\n",
		"charts/hello/values.yaml": "color: none\n",
		"charts/hello/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-settings}
data: {color: {{ .Values.color | quote }}}
`,
		"deploy/helmrelease.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2beta2
kind: HelmRelease
metadata: {name: hello, namespace: ` + realMigrationName + `}
spec:
  interval: 1h
  chart:
    spec:
      chart: ./charts/hello
      interval: 1h
      sourceRef: {kind: GitRepository, name: ` + realMigrationName + `, namespace: ` + harness.FluxNamespace + `}
  values: {color: ` + color + `}
`,
	}
}

// TestRealFluxDeprecatedHelmRelease has Flux's real kustomize-controller
// apply, from Git, a HelmRelease written through
// helm.toolkit.fluxcd.io/v2beta2, and Flux 2.7's real helm-controller
// (v1.4.3, with Flux 2.7's HelmRelease CRD, the last to serve v2beta2)
// reconcile it, with Steward's rendered webhooks registered. apimigration
// marks the controller's write and asks for one reconcile
// (reconcile.fluxcd.io/requestedAt), which helm-controller handles:
// status.lastHandledReconcileAt is Steward's time, and the chart is
// installed. kustomize-controller's unchanged re-applies keep the request
// (no reconcile storm, no Helm upgrade); a values change in Git asks for a
// new one, handled by one upgrade. A stored HelmRelease without the mark
// (written before Steward was installed, or through v2) is marked at its
// next write through v2beta2, and helm-controller reconciles it although
// its spec did not change: the stuck migration apimigration exists for.
// None of the controllers' writes is refused.
func TestRealFluxDeprecatedHelmRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	rf := startRealFlux(ctx, t, realMigrationName, realMigrationName, realMigrationFiles("blue"), nil,
		harness.FluxOptions{HelmControllerRelease: "2.7"})
	flux, source, kustomization := rf.Flux, rf.Source, rf.Kustomization
	wantApplied(t, rf.Applied, rf.Rev)
	hr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2",
		"kind":       "HelmRelease",
		"metadata":   map[string]any{"name": "hello", "namespace": realMigrationName},
	}}
	// Before Flux's cleanup deletes the Kustomization and the
	// GitRepository: the Kustomization is suspended, so that it neither
	// applies the HelmRelease again nor prunes it, and helm-controller
	// uninstalls the release while it still runs.
	t.Cleanup(func() { deleteHelmRelease(t, kustomization, hr) })
	stored := func() (*unstructured.Unstructured, map[string]string) {
		t.Helper()
		cur := fluxGet(ctx, t, hr)
		return cur, migrationMark(cur)
	}
	// reconciled waits until helm-controller has handled the request
	// requested and is Ready for the object's generation.
	reconciled := func(requested string) *unstructured.Unstructured {
		t.Helper()
		var cur *unstructured.Unstructured
		err := harness.Poll(ctx, 3*time.Minute, func() error {
			cur, _ = stored()
			handled, _, _ := unstructured.NestedString(cur.Object, "status", "lastHandledReconcileAt")
			observed, _, _ := unstructured.NestedInt64(cur.Object, "status", "observedGeneration")
			ready := harness.FluxReady(cur)
			if handled != requested || observed != cur.GetGeneration() || !strings.HasPrefix(ready, "Ready=True ") {
				return fmt.Errorf("HelmRelease hello: lastHandledReconcileAt %q (want Steward's %q), generation %d observed %d, %s",
					handled, requested, cur.GetGeneration(), observed, ready)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%v\n--- helm-controller (last lines) ---\n%s", err, lastLines(flux.Log("helm-controller"), 30))
		}
		return cur
	}
	color := func() string {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: realMigrationName, Name: "hello-settings"}, cm); err != nil {
			t.Fatalf("the chart's ConfigMap: %v", err)
		}
		return cm.Data["color"]
	}

	var first map[string]string
	t.Run("KustomizeControllersWriteIsMarked", func(t *testing.T) {
		_, first = stored()
		if first[migratedFrom] != "helm.toolkit.fluxcd.io/v2beta2" || first[requestedAt] == "" || first[requestedAt] != first[migratedAt] {
			t.Fatalf("the HelmRelease kustomize-controller wrote through v2beta2 carries %v; want %s helm.toolkit.fluxcd.io/v2beta2 and %s = %s", first, migratedFrom, requestedAt, migratedAt)
		}
		const warning = "apimigration: helm.toolkit.fluxcd.io/v2beta2 is deprecated"
		t.Logf("Steward's warning in kustomize-controller's log: %t", strings.Contains(flux.Log("kustomize-controller"), warning))
	})
	if first == nil {
		t.FailNow()
	}

	t.Run("HelmControllerHandlesStewardsRequest", func(t *testing.T) {
		cur := reconciled(first[requestedAt])
		if got := color(); got != "blue" {
			t.Errorf("the chart's ConfigMap has color %q, want the HelmRelease's blue", got)
		}
		history, _, _ := unstructured.NestedSlice(cur.Object, "status", "history")
		t.Logf("HelmRelease hello after helm-controller's reconcile: %s, %d release(s) in status.history", harness.FluxReady(cur), len(history))
		if len(history) != 1 {
			t.Errorf("status.history has %d releases, want the one install", len(history))
		}
	})

	t.Run("UnchangedReappliesKeepTheRequest", func(t *testing.T) {
		for i := range 2 {
			wantApplied(t, reconcileSourceAndKustomization(ctx, t, flux, source, kustomization), rf.Rev)
			if _, got := stored(); !cmp.Equal(got, first) {
				t.Errorf("kustomize-controller's re-apply %d changed the mark (-before +after):\n%s", i+1, cmp.Diff(first, got))
			}
		}
		// Long enough for helm-controller to act on a new request, were
		// there one.
		time.Sleep(5 * time.Second)
		cur, _ := stored()
		handled, _, _ := unstructured.NestedString(cur.Object, "status", "lastHandledReconcileAt")
		history, _, _ := unstructured.NestedSlice(cur.Object, "status", "history")
		if handled != first[requestedAt] || len(history) != 1 {
			t.Errorf("after unchanged re-applies helm-controller handled %q (want %q) and has %d releases (want 1)", handled, first[requestedAt], len(history))
		}
	})

	lastRev := rf.Rev
	t.Run("AValuesChangeInGitIsReconciledOnce", func(t *testing.T) {
		rev, err := rf.Repo.Commit(ctx, "green", realMigrationFiles("green"))
		if err != nil {
			t.Fatal(err)
		}
		lastRev = rev
		wantApplied(t, reconcileSourceAndKustomization(ctx, t, flux, source, kustomization), rev)
		_, mark := stored()
		if mark[requestedAt] == first[requestedAt] || mark[requestedAt] != mark[migratedAt] || mark[migratedFrom] != first[migratedFrom] {
			t.Fatalf("after a spec change through v2beta2 the mark is %v; want a new %s equal to %s (before: %v)", mark, requestedAt, migratedAt, first)
		}
		cur := reconciled(mark[requestedAt])
		if got := color(); got != "green" {
			t.Errorf("the chart's ConfigMap has color %q, want Git's new green", got)
		}
		if history, _, _ := unstructured.NestedSlice(cur.Object, "status", "history"); len(history) != 2 {
			t.Errorf("status.history has %d releases, want the install and one upgrade", len(history))
		}
		first = mark
	})

	t.Run("AnUnmarkedHelmReleaseIsReconciledAtItsNextWrite", func(t *testing.T) {
		// As if stored before Steward was installed: no mark. Removed
		// through v2, which never reaches apimigration, by a member of
		// the break-glass group (fluxguard refuses others a change of
		// what Flux applied).
		bob, err := env.As("bob", breakGlass)
		if err != nil {
			t.Fatal(err)
		}
		unmark := fmt.Sprintf(`{"metadata":{"annotations":{%q:null,%q:null}}}`, migratedFrom, migratedAt)
		if err := bob.Patch(ctx, hr.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(unmark))); err != nil {
			t.Fatal(err)
		}
		before, mark := stored()
		if mark[migratedFrom] != "" {
			t.Fatalf("the mark is still there: %v", mark)
		}
		// kustomize-controller re-applies Git's unchanged manifest
		// through v2beta2.
		wantApplied(t, reconcileSourceAndKustomization(ctx, t, flux, source, kustomization), lastRev)
		after, mark := stored()
		t.Logf("after kustomize-controller's re-apply of the unmarked HelmRelease: mark %v, generation %d -> %d", mark, before.GetGeneration(), after.GetGeneration())
		if mark[migratedFrom] != "helm.toolkit.fluxcd.io/v2beta2" || mark[requestedAt] == first[requestedAt] {
			t.Fatalf("kustomize-controller's re-apply through v2beta2 did not mark the HelmRelease afresh: %v (the previous request %s)", mark, first[requestedAt])
		}
		if after.GetGeneration() != before.GetGeneration() {
			t.Errorf("the re-apply changed the spec (generation %d -> %d): helm-controller would reconcile anyway", before.GetGeneration(), after.GetGeneration())
		}
		cur := reconciled(mark[requestedAt])
		if history, _, _ := unstructured.NestedSlice(cur.Object, "status", "history"); len(history) != 2 {
			t.Errorf("status.history has %d releases, want 2: a reconcile of an unchanged release upgrades nothing", len(history))
		}
	})

	t.Run("NoWriteOfFluxIsRefused", func(t *testing.T) {
		kc, hc := harness.FluxControllerUser("kustomize-controller"), harness.FluxControllerUser("helm-controller")
		chart := realMigrationName + "-hello"
		wantWritesAllowed(t, env, "Flux's controllers", func(ev harness.AuditEvent) bool {
			return strings.HasPrefix(ev.User.Username, "system:serviceaccount:"+harness.FluxNamespace+":") &&
				(ev.ObjectRef.Namespace == realMigrationName ||
					ev.ObjectRef.Namespace == harness.FluxNamespace && (ev.ObjectRef.Name == realMigrationName || ev.ObjectRef.Name == chart))
		}, []string{
			"patch helmreleases hello by " + kc,
			"patch helmcharts " + chart + " by " + hc, // server-side apply creates it
			"patch helmreleases hello by " + hc,
		})
	})
}

// migrationMark is apimigration's annotations on obj, with Flux's
// reconcile request.
func migrationMark(obj *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, k := range []string{migratedFrom, migratedAt, requestedAt} {
		if v, ok := obj.GetAnnotations()[k]; ok {
			out[k] = v
		}
	}
	return out
}

// deleteHelmRelease suspends the Kustomization that applies obj, deletes
// obj and waits until helm-controller has uninstalled it and removed its
// finalizer.
func deleteHelmRelease(t *testing.T, kustomization, obj *unstructured.Unstructured) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	suspend := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))
	if err := client.IgnoreNotFound(env.Client.Patch(ctx, kustomization.DeepCopy(), suspend)); err != nil {
		t.Errorf("suspending Kustomization %s: %v", kustomization.GetName(), err)
	}
	// fluxguard reads the suspension from its cache, which may not have
	// it yet: until then the delete is refused, as Flux would re-create
	// the HelmRelease.
	if err := harness.Poll(ctx, 30*time.Second, func() error {
		return client.IgnoreNotFound(env.Client.Delete(ctx, obj.DeepCopy()))
	}); err != nil {
		t.Errorf("deleting HelmRelease %s: %v", obj.GetName(), err)
		return
	}
	if err := harness.Poll(ctx, time.Minute, func() error {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy())
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("HelmRelease %s is still there (%v)", obj.GetName(), err)
	}); err != nil {
		t.Error(err)
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
