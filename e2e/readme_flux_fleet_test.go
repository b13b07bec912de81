package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestReadmeFleetWalkthrough runs docs/walkthroughs.md's Fleet walkthrough as written:
// the agent's Deployment is created, a person's edit and delete are refused
// with fleetguard's reason, break-glass passes with a warning, and an
// unlabelled object is created.
func TestReadmeFleetWalkthrough(t *testing.T) {
	env.LogOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := walkthroughBlock(t, "## Fleet: manual edits are refused")
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "delete", "namespace", "shop", "--wait=false")
	})
	out := runScript(t, ctx, walkthroughsDoc, script)
	assertWalkthrough(t, out,
		"deployment.apps/web created",
		`admission webhook "fleetguard.steward.dev" denied the request: fleetguard: Deployment shop/web is managed by Fleet (bundle deployment web-app, Helm release shop/web-app); manual changes diverge from Git and Fleet reverts them. Changed: /spec/template/spec/containers/0/image.`,
		"Deleting it is refused: Fleet would re-create it.",
		"Warning: fleetguard: break-glass by jane (group steward:break-glass) recorded",
		"deployment.apps/web image updated",
		"configmap/notes created",
	)
}

// suspendedWait is the pause the suspension walkthrough's test makes before
// kustomize-controller's event, where a reader would: Steward's cache sees
// the suspension a moment after the API server, and a script is faster
// than a reader. A server dry run of the event shows when it would be
// stored rewritten.
const suspendedWait = `
for _ in $(seq 1 120); do
  cat <<'PROBE' | kubectl --as system:serviceaccount:flux-system:kustomize-controller create --dry-run=server -o jsonpath='{.message}' -f - | grep -q suspended && break
apiVersion: v1
kind: Event
metadata: {name: web.probe, namespace: apps}
involvedObject: {apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, name: web, namespace: apps}
type: Normal
reason: ReconciliationSucceeded
source: {component: kustomize-controller}
message: Reconciliation finished in 1.2s, next run in 10m0s
PROBE
  sleep 0.5
done
`

// TestReadmeFluxWalkthroughs runs docs/walkthroughs.md's two Flux walkthroughs as
// written, on Flux 2.6's real CRDs: a HelmRelease written through v2beta1
// is marked and warned about, unchanged re-applies keep its mark, and the
// offline check fails for Flux 2.8; suspending a Kustomization records who
// did it, and its controller's event is stored rewritten.
func TestReadmeFluxWalkthroughs(t *testing.T) {
	env.LogOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitForTarget(ctx, t, "2.6", "served-versions") // the sandbox's Flux release
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "delete", "namespace", "apps", "--wait=false")
	})
	// The offline check is `go run ./cmd/steward`, from the repository.
	migration := runScript(t, ctx, walkthroughsDoc, "cd "+root+"\n"+walkthroughBlock(t, "## Flux: deprecated API versions are marked, removed ones refused"))
	assertWalkthrough(t, migration,
		"Warning: apimigration: helm.toolkit.fluxcd.io/v2beta1 is deprecated and removed in Flux 2.7; use v2",
		"helmrelease.helm.toolkit.fluxcd.io/podinfo created",
		"steward.dev/migrated-from: helm.toolkit.fluxcd.io/v2beta1",
		"helmrelease.helm.toolkit.fluxcd.io/podinfo serverside-applied",
		"helmrelease.helm.toolkit.fluxcd.io/podinfo replaced",
		"helmrelease.helm.toolkit.fluxcd.io/podinfo configured",
		"helmrelease.helm.toolkit.fluxcd.io/current created",
		"/tmp/podinfo.yaml:1: error: HelmRelease apps/podinfo (document 1): helm.toolkit.fluxcd.io/v2beta1 was removed in Flux 2.7 (target 2.8)",
		"exit status 1",
	)
	// The two reads of the marks after the create and the unchanged
	// re-applies show the same requestedAt: they asked for no new reconcile.
	var requested []string
	for _, line := range strings.Split(migration, "\n") {
		if _, v, ok := strings.Cut(line, "reconcile.fluxcd.io/requestedAt: "); ok {
			requested = append(requested, v)
		}
	}
	if len(requested) != 2 || requested[0] != requested[1] {
		t.Errorf("requestedAt after the create and after the unchanged re-applies: %q, want the same value twice", requested)
	}

	script := walkthroughBlock(t, "## Flux: a suspended object says so")
	const marker = "\n# kustomize-controller's \"next run in\" event"
	if !strings.Contains(script, marker) {
		t.Fatalf("the walkthrough has no step %q", marker)
	}
	suspension := runScript(t, ctx, walkthroughsDoc, strings.Replace(script, marker, "\n"+suspendedWait+marker, 1))
	assertWalkthrough(t, suspension,
		"kustomization.kustomize.toolkit.fluxcd.io/web created",
		"Warning: suspendnotice: Kustomization apps/web is suspended and will not reconcile until resumed: flux resume kustomization web -n apps",
		`"steward.dev/suspended-by":"jane"`,
		"event/web.demo1 created",
		"Reconciliation finished in 1.2s (suspended: no further runs until resumed)",
	)
}

// assertWalkthrough fails the test unless a walkthrough's output says
// every one of want, and nothing a CRD's schema refuses.
func assertWalkthrough(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, bad := range []string{"is invalid", "Required value", "Unsupported value", "error validating", "unknown field"} {
		if strings.Contains(out, bad) {
			t.Errorf("the walkthrough writes something the CRDs reject (%q):\n%s", bad, out)
		}
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the walkthrough's output does not say %q:\n%s", w, out)
		}
	}
}

// gitopsWait returns a script step that waits until Steward's cache has
// caught up with a walkthrough's last write, as a reader would by the time
// they typed the next command: until a server dry run of args (as jane)
// prints want. A script is faster than a reader; Steward's cache sees an
// owner a moment after the API server.
func gitopsWait(want string, args ...string) string {
	return "\nfor _ in $(seq 1 120); do kubectl --as jane " + strings.Join(args, " ") + " --dry-run=server 2>&1 | grep -q '" + want + "' && break; sleep 0.5; done\n"
}

// TestReadmeFluxguardWalkthrough runs docs/walkthroughs.md's fluxguard
// walkthrough as written, on Flux 2.6's real CRDs.
func TestReadmeFluxguardWalkthrough(t *testing.T) {
	env.LogOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := walkthroughBlock(t, "## Flux: hand edits of what Flux applied are refused")
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "--as", kustomizeUser, "delete", "namespace", "podinfo", "--wait=false")
		_, _, _ = env.Kubectl(context.Background(), "", "--as", kustomizeUser, "-n", fluxSystemNS, "delete", "kustomization", "apps", "--wait=false")
	})
	const refuse, suspended = "\n# A person scales it", "\nkubectl --as jane -n podinfo set image"
	for _, m := range []string{refuse, suspended} {
		if !strings.Contains(script, m) {
			t.Fatalf("the walkthrough has no step %q", m)
		}
	}
	script = strings.Replace(script, refuse, gitopsWait("fluxguard", "-n podinfo label deployment podinfo probe=1")+refuse, 1)
	script = strings.Replace(script, suspended, gitopsWait("is suspended", "-n podinfo label deployment podinfo probe=1")+suspended, 1)
	out := runScript(t, ctx, walkthroughsDoc, script)
	assertWalkthrough(t, out,
		"kustomization.kustomize.toolkit.fluxcd.io/apps created",
		"deployment.apps/podinfo created",
		`admission webhook "fluxguard.steward.dev" denied the request: fluxguard: Deployment podinfo/podinfo is managed by Flux Kustomization flux-system/apps (GitRepository flux-system/flux-system, path ./apps/prod, revision main@sha1:1a2b3c4); it is reverted at the next reconcile (interval 10m). Changed: /spec/replicas.`,
		"Deleting it is refused: Flux would re-create it.",
		"ConfigMap podinfo/notes carries Flux's ownership label kustomize.toolkit.fluxcd.io/name and label kustomize.toolkit.fluxcd.io/namespace (Kustomization flux-system/apps)",
		"kustomization.kustomize.toolkit.fluxcd.io/apps patched",
		"Warning: fluxguard: Deployment podinfo/podinfo is managed by Flux Kustomization flux-system/apps",
		"deployment.apps/podinfo image updated",
	)
}

// TestReadmeArgocdguardWalkthrough runs docs/walkthroughs.md's argocdguard
// walkthrough as written, on Argo CD 3.6's real Application CRD.
func TestReadmeArgocdguardWalkthrough(t *testing.T) {
	env.LogOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := walkthroughBlock(t, "## Argo CD: hand edits of what Argo CD synced are refused")
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "--as", argoController, "delete", "namespace", "guestbook", "--wait=false")
		_, _, _ = env.Kubectl(context.Background(), "", "--as", argoController, "-n", argoNS, "delete", "application", "guestbook", "--wait=false")
	})
	const refuse = "\n# A person's edit"
	if !strings.Contains(script, refuse) {
		t.Fatalf("the walkthrough has no step %q", refuse)
	}
	script = strings.Replace(script, refuse, gitopsWait("argocdguard", "-n guestbook label deployment guestbook-ui probe=1")+refuse, 1)
	out := runScript(t, ctx, walkthroughsDoc, script)
	assertWalkthrough(t, out,
		"application.argoproj.io/guestbook created",
		"deployment.apps/guestbook-ui created",
		`admission webhook "argocdguard.steward.dev" denied the request: argocdguard: Deployment guestbook/guestbook-ui is managed by Argo CD Application argocd/guestbook (repo https://github.com/argoproj/argocd-example-apps, path guestbook, target HEAD, revision 53e28ff); it is reverted at Argo CD's next self-heal (self-heal is on). Changed: /spec/template/spec/containers/0/image.`,
		"Changed: /spec/replicas.",
		"configmap/copy created",
	)
}
