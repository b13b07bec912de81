package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stewardhq/steward/e2e/harness"
)

const (
	generatorNS       = "flux-generated"
	generatorTeamNS   = "flux-generated-team"
	sourceWatcher     = "system:serviceaccount:flux-system:source-watcher"
	fluxGeneratorHook = `admission webhook "fluxguard-generator.steward.dev" denied the request: `
	generatorOwner    = "Flux ArtifactGenerator flux-generated/monorepo (sources GitRepository flux-generated/monorepo); source-watcher applies it again at its next reconcile."
)

// TestFluxguardArtifactGenerator proves, through the real API server with
// source-watcher 2.3's ArtifactGenerator CRD and source-controller's
// ExternalArtifact CRD, that what an ArtifactGenerator's status.inventory
// lists (an ExternalArtifact, and a Namespace it manages) is refused to
// people and left to source-watcher, that its inventory is a record only
// source-watcher writes, and that the generator's label alone guards
// nothing.
func TestFluxguardArtifactGenerator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "e2e", "upstream", "source-watcher", "2.3")}, ErrorIfPathMissing: true})
	if err != nil {
		t.Fatalf("installing source-watcher's CRDs: %v", err)
	}
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "--as", sourceWatcher, "delete", "namespace", generatorNS, generatorTeamNS, "--wait=false")
		if err := envtest.UninstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
			t.Errorf("removing source-watcher's CRDs: %v", err)
		}
	})
	testNamespace(t, ctx, generatorNS)

	// Applied as source-watcher applies: server-side, as itself.
	kubectlOK(t, ctx, `{"apiVersion":"source.extensions.fluxcd.io/v1beta1","kind":"ArtifactGenerator","metadata":{"name":"monorepo","namespace":"`+generatorNS+`"},
"spec":{"sources":[{"alias":"repo","kind":"GitRepository","name":"monorepo"}],"managedNamespaces":{"allowedNames":["ns.startsWith('flux-generated-')"],"prune":true},
"artifacts":[{"name":"frontend","copy":[{"from":"@repo/frontend/**","to":"@artifact/"}]}]}}`,
		"--as", sourceWatcher, "apply", "--server-side", "--field-manager=source-watcher", "-f", "-")
	uid, _, err := env.Kubectl(ctx, "", "-n", generatorNS, "get", "artifactgenerator", "monorepo", "-o", "jsonpath={.metadata.uid}")
	if err != nil || uid == "" {
		t.Fatalf("the ArtifactGenerator's UID: %q, %v", uid, err)
	}
	kubectlOK(t, ctx, "", "--as", sourceWatcher, "-n", generatorNS, "patch", "artifactgenerator", "monorepo", "--subresource=status", "--type=merge", "-p",
		`{"status":{"inventory":[{"kind":"ExternalArtifact","name":"frontend","namespace":"`+generatorNS+`","digest":"sha256:1a2b"},{"kind":"Namespace","name":"`+generatorTeamNS+`","digest":"sha256:3c4d"}]}}`)
	labels := `{"app.kubernetes.io/managed-by":"source-watcher","source.extensions.fluxcd.io/generator":"` + uid + `"}`
	artifact := func(name string) string {
		return `{"apiVersion":"source.toolkit.fluxcd.io/v1","kind":"ExternalArtifact","metadata":{"name":"` + name + `","namespace":"` + generatorNS + `","labels":` + labels + `},
"spec":{"sourceRef":{"apiVersion":"source.extensions.fluxcd.io/v1beta1","kind":"ArtifactGenerator","name":"monorepo","namespace":"` + generatorNS + `"}}}`
	}
	kubectlOK(t, ctx, artifact("frontend"), "--as", sourceWatcher, "apply", "--server-side", "--field-manager=source-watcher", "-f", "-")
	kubectlOK(t, ctx, artifact("backend"), "--as", sourceWatcher, "apply", "--server-side", "--field-manager=source-watcher", "-f", "-")
	kubectlOK(t, ctx, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+generatorTeamNS+`","labels":`+labels+`}}`,
		"--as", sourceWatcher, "apply", "--server-side", "--field-manager=source-watcher", "-f", "-")

	// Steward caches the ArtifactGenerator once its CRD is served.
	want := fluxGeneratorHook + "fluxguard: ExternalArtifact " + generatorNS + "/frontend is managed by " + generatorOwner + " Changed: /spec/sourceRef/name."
	harness.Eventually(t, 60*time.Second, func() error {
		_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", generatorNS, "patch", "externalartifact", "frontend", "--type=merge",
			"-p", `{"spec":{"sourceRef":{"name":"other"}}}`, "--dry-run=server")
		if err == nil || !strings.Contains(stderr, want) {
			return fmt.Errorf("want the denial\n%s\ngot %v:\n%s", want, err, stderr)
		}
		return nil
	})

	t.Run("AManagedNamespaceIsNotDeleted", func(t *testing.T) {
		_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "delete", "namespace", generatorTeamNS, "--dry-run=server")
		want := fluxGeneratorHook + "fluxguard: Namespace " + generatorTeamNS + " is managed by " + generatorOwner + " Deleting it is refused"
		if err == nil || !strings.Contains(stderr, want) {
			t.Errorf("want the denial\n%s\ngot %v:\n%s", want, err, stderr)
		}
	})
	t.Run("TheInventoryIsARecord", func(t *testing.T) {
		_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", generatorNS, "patch", "artifactgenerator", "monorepo", "--subresource=status", "--type=merge",
			"-p", `{"status":{"inventory":[]}}`, "--dry-run=server")
		if err == nil || !strings.Contains(stderr, `admission webhook "fluxguard-records.steward.dev" denied the request`) {
			t.Errorf("a person's change of the inventory: %v\n%s", err, stderr)
		}
	})
	t.Run("SourceWatcherIsNotRefused", func(t *testing.T) {
		kubectlOK(t, ctx, "", "--as", sourceWatcher, "-n", generatorNS, "patch", "externalartifact", "frontend", "--type=merge", "-p", `{"spec":{"sourceRef":{"name":"monorepo"}}}`)
	})
	t.Run("NotInTheInventoryIsNotGuarded", func(t *testing.T) {
		kubectlOK(t, ctx, "", "--as", "jane", "-n", generatorNS, "patch", "externalartifact", "backend", "--type=merge", "-p", `{"spec":{"sourceRef":{"name":"other"}}}`, "--dry-run=server")
	})
}
