package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestSuspendNoticeRewritesImageReflectorScanEvents installs Flux 2.9's
// own ImageRepository CRD (vendored in e2e/upstream), suspends an
// ImageRepository as a user would, and records image-reflector-controller's
// event as that controller words it ("next scan in", not "next run in"):
// the API server sends it to Steward, which stores it rewritten.
func TestSuspendNoticeRewritesImageReflectorScanEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	opts := envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "e2e", "upstream", "flux", "2.9", "image.toolkit.fluxcd.io_imagerepositories.yaml")}, ErrorIfPathMissing: true}
	if _, err := envtest.InstallCRDs(env.Config, opts); err != nil {
		t.Fatalf("installing Flux's ImageRepository CRD: %v", err)
	}
	t.Cleanup(func() {
		if err := envtest.UninstallCRDs(env.Config, opts); err != nil {
			t.Errorf("removing the CRD: %v", err)
		}
	})
	ns := testNamespace(t, ctx, "image-scans")
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "image.toolkit.fluxcd.io/v1",
		"kind":       "ImageRepository",
		"metadata":   map[string]any{"name": "podinfo", "namespace": ns},
		"spec":       map[string]any{"image": "ghcr.io/stefanprodan/podinfo", "interval": "5m"},
	}}
	harness.Eventually(t, 30*time.Second, func() error { return env.Client.Create(ctx, repo) })
	if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ns, "patch", "imagerepositories.v1.image.toolkit.fluxcd.io", "podinfo", "--type=merge", "-p", `{"spec":{"suspend":true}}`); err != nil {
		t.Fatal(err)
	}
	snEventuallyRewritten(ctx, t, "image-reflector-controller",
		corev1.ObjectReference{APIVersion: "image.toolkit.fluxcd.io/v1", Kind: "ImageRepository", Name: "podinfo", Namespace: ns},
		"successful scan, next scan in 5m0s", "successful scan (suspended: no further scans until resumed)")

	// The same event about an object that is not suspended is stored as
	// written.
	if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ns, "patch", "imagerepositories.v1.image.toolkit.fluxcd.io", "podinfo", "--type=merge", "-p", `{"spec":{"suspend":false}}`); err != nil {
		t.Fatal(err)
	}
	snEventuallyRewritten(ctx, t, "image-reflector-controller",
		corev1.ObjectReference{APIVersion: "image.toolkit.fluxcd.io/v1", Kind: "ImageRepository", Name: "podinfo", Namespace: ns},
		"tags did not change, next scan in 5m0s", "tags did not change, next scan in 5m0s")
}
