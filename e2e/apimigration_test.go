package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

const (
	fluxNS           = "flux-apps"
	apimigrationPath = "/mutate/apimigration"
	migratedFrom     = "steward.dev/migrated-from"
	migratedAt       = "steward.dev/migrated-at"
	requestedAt      = "reconcile.fluxcd.io/requestedAt"
	// v2beta1Warning is the warning kubectl prints for a write through
	// HelmRelease v2beta1 at the default target (Flux 2.6, whose CLI has no
	// `flux migrate`, so the warning does not advise it).
	v2beta1Warning = "Warning: apimigration: helm.toolkit.fluxcd.io/v2beta1 is deprecated and removed in Flux 2.7; use v2"
)

// apimigrationFlux28 targets Flux 2.8, which removed helm v2beta2 (and
// v2beta1) and kustomize/source v1beta2.
const apimigrationFlux28 = harness.DefaultConfig + `rules:
  apimigration:
    fluxVersion: "2.8"
`

// helmReleaseYAML is a HelmRelease manifest at apiVersion version.
func helmReleaseYAML(version, name, chartVersion string) string {
	return fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/%s
kind: HelmRelease
metadata:
  name: %s
  namespace: %s
  labels:
    app.kubernetes.io/name: podinfo
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: %q
      sourceRef:
        kind: HelmRepository
        name: podinfo
`, version, name, fluxNS, chartVersion)
}

// storedAnnotations reads an object through its storage version, as Flux's
// controllers do.
func storedAnnotations(t *testing.T, ctx context.Context, gvk schema.GroupVersionKind, name string) map[string]string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: name}, u); err != nil {
		t.Fatalf("reading %s %s: %v", gvk.Kind, name, err)
	}
	return u.GetAnnotations()
}

// stewardAnnotations keeps the annotations this rule writes.
func stewardAnnotations(all map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range []string{migratedFrom, migratedAt, requestedAt} {
		if v, ok := all[k]; ok {
			out[k] = v
		}
	}
	return out
}

var helmReleaseV2 = schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}

// TestAPIMigration proves apimigration through the real API server, the
// sample Flux CRDs and kubectl: writes through deprecated versions are
// warned about and marked for one reconcile, unchanged re-applies (client-
// side apply, server-side apply, replace) never re-trigger it, spec changes
// do, writes through current versions never reach Steward, and with a Flux
// 2.8 target removed versions are refused with the migration advice.
func TestAPIMigration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	// The environment's Flux 2.6 CRDs make 2.6 the target; a test before
	// this one that changed Flux CRDs may have put them back a moment ago.
	waitForTarget(ctx, t, "2.6", "served-versions")
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNS}}); err != nil {
		t.Fatal(err)
	}
	manifest := helmReleaseYAML("v2beta1", "podinfo", "6.5.0")
	var first map[string]string

	t.Run("ApplyThroughV2beta1WarnsAndMarks", func(t *testing.T) {
		_, stderr, err := env.Kubectl(ctx, manifest, "--as", "jane", "apply", "-f", "-")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stderr, v2beta1Warning+"\n") {
			t.Errorf("kubectl's stderr:\n%s\nwant the warning:\n%s", stderr, v2beta1Warning)
		}
		first = stewardAnnotations(storedAnnotations(t, ctx, helmReleaseV2, "podinfo"))
		if first[migratedFrom] != "helm.toolkit.fluxcd.io/v2beta1" {
			t.Errorf("%s = %q", migratedFrom, first[migratedFrom])
		}
		at, err := time.Parse(time.RFC3339, first[migratedAt])
		if err != nil || time.Since(at) > time.Minute || time.Since(at) < -time.Minute {
			t.Errorf("%s = %q is not a recent RFC 3339 time: %v", migratedAt, first[migratedAt], err)
		}
		if first[requestedAt] != first[migratedAt] {
			t.Errorf("%s = %q, want the mark's time %q so the controller reconciles once", requestedAt, first[requestedAt], first[migratedAt])
		}
	})
	if first == nil {
		t.FailNow()
	}

	// Each re-apply below reaches Steward (the call counter moves) and
	// leaves the mark and requestedAt exactly as they were.
	unchanged := map[string][]string{
		"ClientSideApply":               {"apply", "-f", "-"},
		"ServerSideApply":               {"apply", "--server-side", "--force-conflicts", "--field-manager", "kustomize-controller", "-f", "-"},
		"ReplaceDroppingTheAnnotations": {"replace", "-f", "-"},
	}
	for _, name := range []string{"ClientSideApply", "ServerSideApply", "ReplaceDroppingTheAnnotations"} {
		t.Run("UnchangedReapplyKeepsRequestedAt/"+name, func(t *testing.T) {
			before := pathCalls(t, apimigrationPath)
			args := append([]string{"--as", "system:serviceaccount:flux-system:kustomize-controller"}, unchanged[name]...)
			_, stderr, err := env.Kubectl(ctx, reapplyManifest(manifest, name), args...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stderr, v2beta1Warning) {
				t.Errorf("every write through v2beta1 is warned about; stderr:\n%s", stderr)
			}
			if after := pathCalls(t, apimigrationPath); after <= before {
				t.Fatalf("Steward was not called (%v -> %v): the test proves nothing", before, after)
			}
			got := stewardAnnotations(storedAnnotations(t, ctx, helmReleaseV2, "podinfo"))
			if diff := cmp.Diff(first, got); diff != "" {
				t.Errorf("an unchanged re-apply changed the mark (-before +after):\n%s", diff)
			}
		})
	}

	t.Run("SpecChangeRequestsReconcile", func(t *testing.T) {
		_, _, err := env.Kubectl(ctx, helmReleaseYAML("v2beta1", "podinfo", "6.6.0"), "--as", "jane", "apply", "-f", "-")
		if err != nil {
			t.Fatal(err)
		}
		got := stewardAnnotations(storedAnnotations(t, ctx, helmReleaseV2, "podinfo"))
		if got[requestedAt] == first[requestedAt] || got[migratedAt] == first[migratedAt] {
			t.Errorf("a spec change kept requestedAt %q and migrated-at %q", got[requestedAt], got[migratedAt])
		}
		if got[requestedAt] != got[migratedAt] || got[migratedFrom] != first[migratedFrom] {
			t.Errorf("annotations after the spec change: %v", got)
		}
	})

	t.Run("CurrentVersionWritesAreUntouched", func(t *testing.T) {
		before := pathCalls(t, apimigrationPath)
		_, stderr, err := env.Kubectl(ctx, helmReleaseYAML("v2", "podinfo-v2", "6.5.0"), "--as", "jane", "apply", "-f", "-")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stderr, "apimigration") {
			t.Errorf("a write through v2 was warned about:\n%s", stderr)
		}
		if got := stewardAnnotations(storedAnnotations(t, ctx, helmReleaseV2, "podinfo-v2")); len(got) != 0 {
			t.Errorf("a write through v2 was annotated: %v", got)
		}
		// An update of the migrated object through v2 (what Flux's
		// controllers do) leaves its mark alone.
		marked := stewardAnnotations(storedAnnotations(t, ctx, helmReleaseV2, "podinfo"))
		if _, _, err := env.Kubectl(ctx, "", "--as", "system:serviceaccount:flux-system:helm-controller", "-n", fluxNS,
			"patch", "helmreleases.v2.helm.toolkit.fluxcd.io", "podinfo", "--type=merge", "-p", `{"spec":{"interval":"5m"}}`); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(marked, stewardAnnotations(storedAnnotations(t, ctx, helmReleaseV2, "podinfo"))); diff != "" {
			t.Errorf("a v2 spec change touched the mark:\n%s", diff)
		}
		if after := pathCalls(t, apimigrationPath); after != before {
			t.Errorf("writes through v2 reached Steward (%v -> %v); the match condition should keep them in the API server", before, after)
		}
	})

	t.Run("OtherSampleKinds", func(t *testing.T) {
		cases := map[string]struct {
			manifest string
			gvk      schema.GroupVersionKind
			warning  string
			marked   bool
		}{
			"KustomizationV1beta2": {
				manifest: "apiVersion: kustomize.toolkit.fluxcd.io/v1beta2\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: " + fluxNS + "\nspec:\n  interval: 10m\n  path: ./apps\n  prune: true\n  sourceRef: {kind: GitRepository, name: apps}\n",
				gvk:      schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"},
				warning:  "Warning: apimigration: kustomize.toolkit.fluxcd.io/v1beta2 is deprecated and removed in Flux 2.8; use v1",
				marked:   true,
			},
			"GitRepositoryV1beta2": {
				manifest: "apiVersion: source.toolkit.fluxcd.io/v1beta2\nkind: GitRepository\nmetadata:\n  name: apps\n  namespace: " + fluxNS + "\nspec:\n  interval: 5m\n  url: https://example.org/apps.git\n",
				gvk:      schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"},
				warning:  "Warning: apimigration: source.toolkit.fluxcd.io/v1beta2 is deprecated and removed in Flux 2.8; use v1",
				marked:   true,
			},
			"GitRepositoryV1": {
				manifest: "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: current\n  namespace: " + fluxNS + "\nspec:\n  interval: 5m\n  url: https://example.org/apps.git\n",
				gvk:      schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"},
			},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				_, stderr, err := env.Kubectl(ctx, tc.manifest, "--as", "jane", "apply", "-f", "-")
				if err != nil {
					t.Fatal(err)
				}
				if tc.warning != "" && !strings.Contains(stderr, tc.warning) {
					t.Errorf("stderr:\n%s\nwant:\n%s", stderr, tc.warning)
				}
				if tc.warning == "" && strings.Contains(stderr, "apimigration") {
					t.Errorf("unexpected warning:\n%s", stderr)
				}
				got := stewardAnnotations(storedAnnotations(t, ctx, tc.gvk, objectName(tc.manifest)))
				if (len(got) == 3) != tc.marked {
					t.Errorf("annotations %v, want marked=%v", got, tc.marked)
				}
			})
		}
	})

	t.Run("RemovedVersionsAreRefusedAtFlux28", func(t *testing.T) {
		if _, err := env.RestartSteward(ctx, apimigrationFlux28); err != nil {
			t.Fatalf("starting steward with fluxVersion 2.8: %v", err)
		}
		restoreDefaultSteward(t)
		_, _, err := env.Kubectl(ctx, helmReleaseYAML("v2beta2", "legacy", "6.5.0"), "--as", "jane", "apply", "-f", "-")
		want := `admission webhook "apimigration.steward.dev" denied the request: apimigration: HelmRelease flux-apps/legacy is written through ` +
			"helm.toolkit.fluxcd.io/v2beta2, which Flux 2.8 removed (this cluster targets Flux 2.8); change apiVersion to helm.toolkit.fluxcd.io/v2 " +
			"in the manifest it comes from (`flux migrate -f <dir>` rewrites a checkout, `flux migrate` the stored objects)"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("a v2beta2 write at Flux 2.8:\n%v\nwant the refusal:\n%s", err, want)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(helmReleaseV2)
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "legacy"}, u); err == nil {
			t.Error("the refused HelmRelease was stored")
		}
		// The same object through v2 is fine.
		if _, stderr, err := env.Kubectl(ctx, helmReleaseYAML("v2", "legacy", "6.5.0"), "--as", "jane", "apply", "-f", "-"); err != nil || strings.Contains(stderr, "apimigration") {
			t.Errorf("a v2 write at Flux 2.8: %v\n%s", err, stderr)
		}
	})
}

// reapplyManifest is the manifest each unchanged re-apply sends.
func reapplyManifest(manifest, how string) string {
	if how == "ClientSideApply" {
		// kubectl sends nothing when its three-way patch is empty, so the
		// re-apply adds a label: not a spec change, and Flux does not
		// reconcile on labels, so neither does Steward ask it to.
		return strings.Replace(manifest, "app.kubernetes.io/name: podinfo", "app.kubernetes.io/name: podinfo\n    team: web", 1)
	}
	return manifest
}

// objectName reads metadata.name from a manifest built in this file.
func objectName(manifest string) string {
	for _, line := range strings.Split(manifest, "\n") {
		if v, ok := strings.CutPrefix(line, "  name: "); ok {
			return v
		}
	}
	return ""
}
