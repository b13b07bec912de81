package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestReadmeRealFluxWalkthrough runs docs/walkthroughs.md's real-Flux
// walkthrough as written, on the repository `make sandbox SANDBOX_FLUX=1`
// starts (harness.SandboxFluxRepo): a commit is applied by the real
// kustomize-controller, a person's edit of it is refused naming the
// repository's path, the autoscaler's scale passes, a person's scale is
// refused as not in Git.
func TestReadmeRealFluxWalkthrough(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	skipWithoutFlux(t, harness.FluxOptions{})
	env.LogOnFailure(t)
	t.Cleanup(restoreEnvironmentFluxCRDs(t))
	rf, err := env.StartFluxRepo(ctx, t, harness.SandboxFluxRepo())
	if err != nil {
		t.Fatal(err)
	}
	script := walkthroughBlock(t, "## Flux for real: commit, see it applied, see an edit refused")
	// A script is faster than a reader: Steward's cache sees the
	// Kustomization's new inventory a moment after the API server.
	const marker = "\n# A person's edit of what Git declares"
	if !strings.Contains(script, marker) {
		t.Fatalf("the walkthrough has no step %q", marker)
	}
	script = strings.Replace(script, marker, gitopsWait("denied", "-n storefront patch configmap settings --type=merge -p '{\"data\":{\"color\":\"probe\"}}'")+marker, 1)
	out := runScript(t, ctx, walkthroughsDoc, "export SANDBOX_GIT="+rf.Repo.WorkTree()+"\n"+script)
	assertWalkthrough(t, out,
		"kustomization.kustomize.toolkit.fluxcd.io/sandbox condition met",
		"\nblue\n",
		`admission webhook "fluxguard.steward.dev" denied the request: fluxguard: ConfigMap storefront/settings is managed by Flux Kustomization flux-system/sandbox (GitRepository flux-system/sandbox, path ./deploy, revision main@sha1:`,
		"deployment.apps/web scaled",
		`admission webhook "fluxguard-scale.steward.dev" denied the request: fluxguard: Deployment storefront/web is managed by Flux Kustomization flux-system/sandbox`,
	)
	t.Log(out)
}
