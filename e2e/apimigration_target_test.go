package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/e2e/harness"
)

// targetNS is the namespace of the Flux objects written here.
const targetNS = "flux-target"

// The labels `flux install` (and the release's install.yaml) put on every
// object it installs, the CRDs included.
const (
	fluxVersionLabel  = "app.kubernetes.io/version"
	fluxPartOfLabel   = "app.kubernetes.io/part-of"
	fluxInstanceLabel = "app.kubernetes.io/instance"
)

// TestAPIMigrationFollowsTheInstalledFluxRelease installs Flux 2.6's real
// CRDs, labelled as Flux's installation labels them, under the running
// Steward, then upgrades them release by release to 2.10: without fluxVersion in its
// configuration, Steward's target follows each upgrade without a restart
// (the metric and the log say so), and so does its advice: image v1beta2 is
// left alone at 2.6, where it is current, and advised toward v1 from 2.7,
// the first release serving image v1; suspendnotice follows the same
// upgrades, to 2.9, which serves image v1 only; 2.10 deprecates Alert
// v1beta3. Without the label the target is read from the CRDs themselves
// (served versions, deprecation marks, schema fields), and where they
// cannot tell, the range is named; a pinned fluxVersion is kept whatever
// the CRDs say.
func TestAPIMigrationFollowsTheInstalledFluxRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	testNamespace(t, ctx, targetNS)
	t.Cleanup(restoreEnvironmentFluxCRDs(t))

	// The environment installs Flux 2.6's CRDs as the controllers'
	// repositories ship them, without the label: the release their served
	// versions match.
	waitForTarget(ctx, t, "2.6", "served-versions")

	installFluxCRDs(ctx, t, "2.6", "v2.6.0")
	waitForTarget(ctx, t, "2.6", "cluster-label")
	t.Run("Flux26", func(t *testing.T) {
		applyExpecting(ctx, t, imageRepositoryYAML("v1beta2", "at-26"), "")
		applyExpecting(ctx, t, imageRepositoryYAML("v1beta1", "old-at-26"),
			"Warning: apimigration: image.toolkit.fluxcd.io/v1beta1 is deprecated and removed in Flux 2.7; use v1beta2\n")
		applyExpecting(ctx, t, targetHelmReleaseYAML("v2beta1", "hr-26"),
			"Warning: apimigration: helm.toolkit.fluxcd.io/v2beta1 is deprecated and removed in Flux 2.7; use v2\n")
	})

	installFluxCRDs(ctx, t, "2.7", "v2.7.0")
	waitForTarget(ctx, t, "2.7", "cluster-label")
	t.Run("Flux27", func(t *testing.T) {
		applyExpecting(ctx, t, imageRepositoryYAML("v1beta2", "at-27"),
			"Warning: apimigration: image.toolkit.fluxcd.io/v1beta2 is deprecated and removed in Flux 2.9; use v1 (flux migrate)\n")
		applyExpecting(ctx, t, imageRepositoryYAML("v1", "current-at-27"), "")
		applyExpecting(ctx, t, targetHelmReleaseYAML("v2beta2", "hr-27"),
			"Warning: apimigration: helm.toolkit.fluxcd.io/v2beta2 is deprecated and removed in Flux 2.8; use v2 (flux migrate)\n")
	})
	if !logged(env.Steward.Log(), `"msg":"target Flux release changed"`, `"fluxVersion":"2.7"`, `"source":"cluster-label"`, `"previousFluxVersion":"2.6"`) {
		t.Errorf("no log line for the change to 2.7 in:\n%s", env.Steward.LogTail(40))
	}

	installFluxCRDs(ctx, t, "2.8", "v2.8.0")
	waitForTarget(ctx, t, "2.8", "cluster-label")
	t.Run("Flux28", func(t *testing.T) {
		applyExpecting(ctx, t, imageRepositoryYAML("v1beta2", "at-28"),
			"Warning: apimigration: image.toolkit.fluxcd.io/v1beta2 is deprecated and removed in Flux 2.9; use v1 (flux migrate)\n")
	})
	// Flux 2.9 no longer serves image v1beta2. Before that upgrade, as
	// `flux migrate` does, the objects stored through it are rewritten (the
	// test removes its two) and the CRDs' stored versions are cut to what
	// 2.9 serves.
	for _, name := range []string{"at-26", "old-at-26"} {
		if _, _, err := env.Kubectl(ctx, "", "delete", "imagerepositories.image.toolkit.fluxcd.io", name, "-n", targetNS, "--wait"); err != nil {
			t.Fatal(err)
		}
	}
	trimStoredVersions(ctx, t, "2.9")
	installFluxCRDs(ctx, t, "2.9", "v2.9.0")
	waitForTarget(ctx, t, "2.9", "cluster-label")
	// suspendnotice followed the same upgrades: its cache of ImageRepositories
	// moved from v1beta2 (2.6) to v1, which is all 2.9 serves, so a
	// suspension written through v1 still rewrites image-reflector-controller's
	// events.
	t.Run("SuspendNoticeAfterTheUpgrades", func(t *testing.T) {
		if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", targetNS, "patch", "imagerepositories.v1.image.toolkit.fluxcd.io", "current-at-27", "--type=merge", "-p", `{"spec":{"suspend":true}}`); err != nil {
			t.Fatal(err)
		}
		snEventuallyRewritten(ctx, t, "image-reflector-controller",
			corev1.ObjectReference{APIVersion: "image.toolkit.fluxcd.io/v1", Kind: "ImageRepository", Name: "current-at-27", Namespace: targetNS},
			"successful scan, next scan in 5m0s", "successful scan (suspended: no further scans until resumed)")
	})

	// fluxguard on the newest release's CRDs, while they are installed:
	// Kustomizations' drift ignore rules and HelmReleases' inventories.
	t.Run("FluxguardOnFlux29", func(t *testing.T) { fluxguardOnFlux29(ctx, t) })

	// Flux 2.10 serves Alert and Provider at v1, stores them there, and
	// marks v1beta3 deprecated, with its own warning.
	trimStoredVersions(ctx, t, "2.10")
	installFluxCRDs(ctx, t, "2.10", "v2.10.0")
	waitForTarget(ctx, t, "2.10", "cluster-label")
	t.Run("Flux210", func(t *testing.T) {
		applyExpecting(ctx, t, alertYAML("v1", "current-at-210"), "")
		applyExpecting(ctx, t, alertYAML("v1beta3", "at-210"),
			"Warning: apimigration: notification.toolkit.fluxcd.io/v1beta3 is deprecated; use v1 (flux migrate)\n")
		out, _, err := env.Kubectl(ctx, "", "get", "alerts.v1.notification.toolkit.fluxcd.io", "at-210", "-n", targetNS,
			"-o", `jsonpath={.metadata.annotations.steward\.dev/migrated-from}`)
		if err != nil || out != "notification.toolkit.fluxcd.io/v1beta3" {
			t.Errorf("the Alert written through v1beta3 is marked %q (%v), want notification.toolkit.fluxcd.io/v1beta3", out, err)
		}
		// The API server adds Flux's own deprecation warning.
		_, stderr, err := env.Kubectl(ctx, "", "get", "alerts.v1beta3.notification.toolkit.fluxcd.io", "at-210", "-n", targetNS)
		if err != nil || !strings.Contains(stderr, "v1beta3 Alert is deprecated, upgrade to v1") {
			t.Errorf("reading through v1beta3 (%v): stderr %q lacks the CRD's deprecation warning", err, stderr)
		}
	})

	t.Run("UnlabelledCRDsAreReadFromThemselves", func(t *testing.T) {
		installFluxCRDs(ctx, t, "2.10", "")
		waitForTarget(ctx, t, "2.10", "served-versions")
		// Back to 2.9, which serves no Alert v1: the Alerts stored there go
		// first, as the storage version a downgrade drops must.
		for _, name := range []string{"current-at-210", "at-210"} {
			if _, _, err := env.Kubectl(ctx, "", "delete", "alerts.notification.toolkit.fluxcd.io", name, "-n", targetNS, "--wait"); err != nil {
				t.Fatal(err)
			}
		}
		trimStoredVersions(ctx, t, "2.9")
		installFluxCRDs(ctx, t, "2.9", "")
		waitForTarget(ctx, t, "2.9", "served-versions")
		installFluxCRDs(ctx, t, "2.8", "")
		waitForTarget(ctx, t, "2.8", "served-versions")
	})

	// With only image-reflector-controller's CRDs of 2.9 installed,
	// nothing tells 2.9 from 2.10 (its CRDs did not change): the metric and
	// the log name the range. (A refusal naming it needs a version the
	// CRDs serve and the range removes, which these CRDs cannot have: the
	// unit test TestARangeIsNamedWhereverTheTargetIsShown shows it.)
	t.Run("WhereTheCRDsCannotTellTheRangeIsNamed", func(t *testing.T) {
		installFluxCRDs(ctx, t, "2.9", "")
		var others []*apiextensionsv1.CustomResourceDefinition
		for _, crd := range fluxCRDs(t, "2.9") {
			if crd.Spec.Names.Kind != "ImageRepository" && crd.Spec.Names.Kind != "ImagePolicy" {
				others = append(others, crd)
			}
		}
		if err := env.DeleteCRDs(ctx, t, 3*time.Minute, others...); err != nil {
			t.Fatal(err)
		}
		waitForTarget(ctx, t, "2.9 or 2.10", "served-versions")
		if !logged(env.Steward.Log(), `"msg":"target Flux release changed"`, `"fluxVersion":"2.9 or 2.10"`, `"source":"served-versions"`) {
			t.Errorf("no log line naming the range in:\n%s", env.Steward.LogTail(40))
		}
	})

	t.Run("APinnedReleaseIsKept", func(t *testing.T) {
		if _, err := env.RestartSteward(ctx, harness.DefaultConfig+"rules:\n  apimigration:\n    fluxVersion: \"2.9\"\n"); err != nil {
			t.Fatalf("starting steward with fluxVersion 2.9: %v", err)
		}
		restoreDefaultSteward(t)
		waitForTarget(ctx, t, "2.9", "config")
		// Relabelling the CRDs asks discovery again; the target stays.
		installFluxCRDs(ctx, t, "2.8", "v2.8.0")
		time.Sleep(3 * time.Second)
		waitForTarget(ctx, t, "2.9", "config")
		_, _, err := env.Kubectl(ctx, imageRepositoryYAML("v1beta2", "pinned"), "--as", "jane", "apply", "-f", "-")
		want := "ImageRepository flux-target/pinned is written through image.toolkit.fluxcd.io/v1beta2, which Flux 2.9 removed (this cluster targets Flux 2.9)"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("an image v1beta2 write with fluxVersion 2.9 pinned:\n%v\nwant the refusal containing:\n%s", err, want)
		}
	})
}

// imageRepositoryYAML is an ImageRepository manifest at apiVersion version.
func imageRepositoryYAML(version, name string) string {
	return fmt.Sprintf(`apiVersion: image.toolkit.fluxcd.io/%s
kind: ImageRepository
metadata:
  name: %s
  namespace: %s
spec:
  image: ghcr.io/stefanprodan/podinfo
  interval: 5m
`, version, name, targetNS)
}

// alertYAML is an Alert manifest at apiVersion version.
func alertYAML(version, name string) string {
	return fmt.Sprintf(`apiVersion: notification.toolkit.fluxcd.io/%s
kind: Alert
metadata:
  name: %s
  namespace: %s
spec:
  providerRef:
    name: on-call
  eventSources:
  - kind: Kustomization
    name: '*'
`, version, name, targetNS)
}

// targetHelmReleaseYAML is a HelmRelease manifest at apiVersion version.
func targetHelmReleaseYAML(version, name string) string {
	return strings.Replace(helmReleaseYAML(version, name, "6.5.0"), "namespace: "+fluxNS, "namespace: "+targetNS, 1)
}

// applyExpecting applies manifest as a user and wants Steward's warning
// (or none, when warning is empty) in kubectl's output. The first write
// after an upgrade may find the API server not serving the version yet,
// so a failed apply is repeated.
func applyExpecting(ctx context.Context, t *testing.T, manifest, warning string) {
	t.Helper()
	var stderr string
	harness.Eventually(t, 30*time.Second, func() error {
		var err error
		_, stderr, err = env.Kubectl(ctx, manifest, "--as", "jane", "apply", "-f", "-")
		return err
	})
	if warning == "" && strings.Contains(stderr, "apimigration") {
		t.Errorf("%s: unexpected warning:\n%s", firstLine(manifest), stderr)
	}
	if warning != "" && !strings.Contains(stderr, warning) {
		t.Errorf("%s: kubectl's stderr:\n%s\nwant the warning:\n%s", firstLine(manifest), stderr, warning)
	}
}

// logged reports whether one line of log has every part.
func logged(log string, parts ...string) bool {
	for _, line := range strings.Split(log, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// waitForTarget waits until steward_apimigration_target_info names the
// release and source.
func waitForTarget(ctx context.Context, t *testing.T, release, source string) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, func() error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		text, err := env.Steward.MetricsText()
		if err != nil {
			return err
		}
		families, err := harness.ParseMetrics(text)
		if err != nil {
			return err
		}
		f := families["steward_apimigration_target_info"]
		if f == nil || len(f.GetMetric()) != 1 {
			return fmt.Errorf("want one steward_apimigration_target_info series, have %v", f)
		}
		m := f.GetMetric()[0]
		if !harness.HasLabels(m, map[string]string{"flux_version": release, "source": source}) || m.GetGauge().GetValue() != 1 {
			return fmt.Errorf("steward_apimigration_target_info is %v, want flux_version=%s source=%s", m, release, source)
		}
		return nil
	})
}

// fluxCRDs reads the vendored CRDs of a Flux release.
func fluxCRDs(t *testing.T, release string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "e2e", "upstream", "flux", release, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs vendored for Flux %s: %v", release, err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, file := range files {
		out = append(out, readCRDFile(t, file))
	}
	return out
}

func readCRDFile(t *testing.T, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(b, crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return crd
}

// installFluxCRDs installs or upgrades to a Flux release's CRDs, labelled
// with label as `flux install` labels them (unlabelled when label is
// empty, as the controllers' repositories ship them).
func installFluxCRDs(ctx context.Context, t *testing.T, release, label string) {
	t.Helper()
	for _, crd := range fluxCRDs(t, release) {
		if label != "" {
			crd.Labels = map[string]string{fluxVersionLabel: label, fluxPartOfLabel: "flux", fluxInstanceLabel: "flux-system"}
		}
		upsertCRD(ctx, t, crd)
	}
}

// trimStoredVersions cuts each Flux CRD's status.storedVersions to the
// versions release's CRD keeps, so the upgrade to it may drop the others,
// as `flux migrate` does once the objects are stored in current versions.
func trimStoredVersions(ctx context.Context, t *testing.T, release string) {
	t.Helper()
	for _, next := range fluxCRDs(t, release) {
		keeps := map[string]bool{}
		for _, v := range next.Spec.Versions {
			keeps[v.Name] = true
		}
		harness.Eventually(t, 30*time.Second, func() error {
			cur := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(next), cur); err != nil {
				return client.IgnoreNotFound(err)
			}
			var stored []string
			for _, v := range cur.Status.StoredVersions {
				if keeps[v] {
					stored = append(stored, v)
				}
			}
			if len(stored) == len(cur.Status.StoredVersions) {
				return nil
			}
			cur.Status.StoredVersions = stored
			return env.Client.Status().Update(ctx, cur)
		})
	}
}

// upsertCRD creates crd, or replaces the CRD of that name with it
// (labels included).
func upsertCRD(ctx context.Context, t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() error {
		cur := &apiextensionsv1.CustomResourceDefinition{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), cur)
		if apierrors.IsNotFound(err) {
			return env.Client.Create(ctx, crd.DeepCopy())
		}
		if err != nil {
			return err
		}
		next := crd.DeepCopy()
		next.ResourceVersion = cur.ResourceVersion
		return env.Client.Update(ctx, next)
	})
}

// restoreEnvironmentFluxCRDs returns the cleanup that puts the shared
// environment's Flux CRDs back as harness.Start installed them: Flux 2.6's
// own CRDs from e2e/upstream, unlabelled, and no other Flux CRD.
func restoreEnvironmentFluxCRDs(t *testing.T) func() {
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		dirs, err := harness.UpstreamCRDDirs()
		if err != nil {
			t.Error(err)
			return
		}
		var files []string
		for _, d := range dirs {
			if strings.Contains(d, string(filepath.Separator)+"flux"+string(filepath.Separator)) {
				files = append(files, d)
			}
		}
		if len(files) == 0 {
			t.Errorf("the environment installs no Flux CRDs: %v", dirs)
			return
		}
		samples := map[string]bool{}
		for _, file := range files {
			crd := readCRDFile(t, file)
			samples[crd.Name] = true
			upsertCRD(ctx, t, crd)
		}
		var extra []*apiextensionsv1.CustomResourceDefinition
		for _, crd := range fluxCRDs(t, "2.8") {
			if !samples[crd.Name] {
				extra = append(extra, crd)
			}
		}
		if err := env.DeleteCRDs(ctx, t, 3*time.Minute, extra...); err != nil {
			t.Error(err)
		}
		// Steward's target is back to the environment's, so the next test
		// finds what it expects.
		waitForTarget(ctx, t, "2.6", "served-versions")
	}
}
