package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

const (
	argoNS          = "argocd"
	argoAppsNS      = "argo-apps"
	argoController  = "system:serviceaccount:argocd:argocd-application-controller"
	argoServer      = "system:serviceaccount:argocd:argocd-server"
	argocdguardPath = "/validate/argocdguard"
	argocdguardHook = `admission webhook "argocdguard.steward.dev" denied the request: `
	argoOwner       = "Argo CD Application argocd/guestbook (repo https://github.com/argoproj/argocd-example-apps, path guestbook, target HEAD, revision 53e28ff); it is reverted at Argo CD's next self-heal (self-heal is on)."
)

// argoApplication is the Application, with the status Argo CD's
// controller writes after a sync: the revision and the objects it
// manages, one of them no longer in Git.
const argoApplication = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
spec:
  project: default
  source: {repoURL: "https://github.com/argoproj/argocd-example-apps", path: guestbook, targetRevision: HEAD}
  destination: {server: "https://kubernetes.default.svc", namespace: argo-apps}
  syncPolicy: {automated: {selfHeal: true, prune: false}}
status:
  sync: {status: Synced, revision: 53e28ff20cc530b9ada2173fbbd64d48338583ba}
  resources:
  - {version: v1, kind: Service, namespace: argo-apps, name: guestbook-ui}
  - {group: apps, version: v1, kind: Deployment, namespace: argo-apps, name: guestbook-ui}
  - {version: v1, kind: ConfigMap, namespace: argo-apps, name: retired, requiresPruning: true}
`

// argoTracked is what Argo CD's controller applies: each object carries a
// tracking id that names itself.
func argoTracked(kind, apiVersion, name, extra string) string {
	group, _, _ := strings.Cut(apiVersion, "/")
	if !strings.Contains(apiVersion, "/") {
		group = ""
	}
	return fmt.Sprintf(`
apiVersion: %s
kind: %s
metadata:
  name: %s
  namespace: argo-apps
  annotations: {"argocd.argoproj.io/tracking-id": "guestbook:%s/%s:argo-apps/%s"}
%s`, apiVersion, kind, name, group, kind, name, extra)
}

var argoApplied = strings.Join([]string{
	argoTracked("Deployment", "apps/v1", "guestbook-ui", `spec:
  replicas: 1
  selector: {matchLabels: {app: guestbook-ui}}
  template:
    metadata: {labels: {app: guestbook-ui}}
    spec: {containers: [{name: guestbook-ui, image: gcr.io/heptio-images/ks-guestbook-demo:0.2}]}`),
	argoTracked("Service", "v1", "guestbook-ui", `spec: {ports: [{port: 80}], selector: {app: guestbook-ui}}`),
	argoTracked("ConfigMap", "v1", "retired", `data: {a: "1"}`),
}, "\n---\n")

// TestArgocdguard proves argocdguard through the real API server, with
// Argo CD's own Application CRD: the application controller syncs and is
// never sent to Steward, people's and argocd-server's edits are refused
// with the whole explanation, forged and stripped tracking ids are
// refused, a copied one claims nothing, and what Argo CD would prune or
// has paused is not guarded.
func TestArgocdguard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	for _, ns := range []string{argoNS, argoAppsNS} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "--as", argoController, "delete", "namespace", argoAppsNS, "--wait=false")
		_, _, _ = env.Kubectl(context.Background(), "", "-n", argoNS, "delete", "application", "guestbook", "--wait=false")
	})
	kubectlOK(t, ctx, argoApplication, "--as", argoController, "apply", "-f", "-")
	// Synced as Argo CD syncs with server-side apply, under its field
	// manager, whose managedFields entry then says which fields are Git's.
	kubectlOK(t, ctx, argoApplied, "--as", argoController, "apply", "--server-side", "--field-manager=argocd-controller", "-f", "-")
	harness.Eventually(t, 30*time.Second, func() error {
		_, stderr, err := env.Kubectl(ctx, "", "--as", adversary, "-n", argoAppsNS, "label", "service", "guestbook-ui", "probe=1", "--dry-run=server")
		if err == nil || !strings.Contains(stderr, argocdguardHook) {
			return fmt.Errorf("a hand edit is not refused yet: %v %s", err, stderr)
		}
		return nil
	})

	t.Run("TheWholeDenial", func(t *testing.T) {
		_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", argoAppsNS, "scale", "deployment", "guestbook-ui", "--replicas=3")
		want := "argocdguard: Deployment argo-apps/guestbook-ui is managed by " + argoOwner + " Changed: /spec/replicas. Change it in the Git repository instead; " +
			"to pause Argo CD, set argocd.argoproj.io/skip-reconcile=true on Argo CD Application argocd/guestbook; in an emergency repeat the request as a member of steward:break-glass."
		if err == nil || !strings.Contains(stderr, want) {
			t.Fatalf("want the denial\n%s\ngot %v:\n%s", want, err, stderr)
		}
	})

	t.Run("TheControllerAndUntrackedObjectsNeverReachSteward", func(t *testing.T) {
		unchangedCalls(t, argocdguardPath, func() {
			kubectlOK(t, ctx, "", "--as", argoController, "-n", argoAppsNS, "label", "deployment", "guestbook-ui", "synced=yes")
			kubectlOK(t, ctx, "", "--as", "jane", "-n", argoAppsNS, "create", "configmap", "untracked")
			kubectlOK(t, ctx, "", "--as", "jane", "-n", argoAppsNS, "label", "configmap", "untracked", "edited=yes")
		})
	})

	mallory, err := env.As(adversary)
	if err != nil {
		t.Fatal(err)
	}
	in := func(args ...string) []string { return append([]string{"-n", argoAppsNS}, args...) }
	const (
		deleting = "Deleting it is refused: Argo CD would re-create it."
		stripped = "Removing Argo CD's ownership annotation argocd.argoproj.io/tracking-id is refused"
		selfID   = `{"argocd.argoproj.io/tracking-id":"guestbook:/ConfigMap:argo-apps/forged"}`
	)
	runChains(ctx, t, []chain{{
		name: "StripTrackingIDThenEdit",
		steps: []step{
			{what: "remove the tracking id", refused: stripped, kubectl: in("annotate", "service", "guestbook-ui", "argocd.argoproj.io/tracking-id-")},
			{what: "point it at another object", refused: "Changed: /metadata/annotations/argocd.argoproj.io~1tracking-id.", kubectl: in("annotate", "service", "guestbook-ui", "argocd.argoproj.io/tracking-id=guestbook:/Service:argo-apps/other", "--overwrite")},
			{what: "then edit", refused: "Changed: /spec/ports/0/port.", kubectl: in("patch", "service", "guestbook-ui", "--type=json", "-p", `[{"op":"replace","path":"/spec/ports/0/port","value":8080}]`)},
		},
	}, {
		name: "StatusMetadataAndOwnerReferences",
		steps: []step{
			{what: "remove the tracking id through /status", refused: stripped, kubectl: in("patch", "service", "guestbook-ui", "--subresource=status", "--type=json", "-p", `[{"op":"remove","path":"/metadata/annotations/argocd.argoproj.io~1tracking-id"}]`)},
			{what: "create a ConfigMap to own the Deployment", allowed: "an untracked object is no business of argocdguard", kubectl: in("create", "configmap", "argo-bait")},
			{what: "make it an owner of the Deployment", refused: "Adding the owner reference ConfigMap argo-bait is refused", do: func(ctx context.Context) error {
				return addOwnerIn(ctx, mallory, argoAppsNS, "guestbook-ui", "argo-bait", false)
			}},
		},
	}, {
		name: "ForgedAndCopiedTrackingIDs",
		steps: []step{
			{what: "create a ConfigMap with a tracking id naming itself", refused: "which only Argo CD's application controller sets", do: func(ctx context.Context) error {
				return mallory.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: argoAppsNS, Annotations: map[string]string{"argocd.argoproj.io/tracking-id": "guestbook:/ConfigMap:argo-apps/forged"}}})
			}},
			{what: "create a ConfigMap with the Deployment's tracking id copied", allowed: "a tracking id that names another object claims nothing, as Argo CD reads it", do: func(ctx context.Context) error {
				return mallory.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "copied", Namespace: argoAppsNS, Annotations: map[string]string{"argocd.argoproj.io/tracking-id": "guestbook:apps/Deployment:argo-apps/guestbook-ui"}}})
			}},
			{what: "edit the copy", allowed: "still claims nothing", kubectl: in("label", "configmap", "copied", "edited=yes")},
			{what: "make the copy name itself", refused: "would gain Argo CD's ownership", kubectl: in("annotate", "configmap", "copied", "argocd.argoproj.io/tracking-id=guestbook:/ConfigMap:argo-apps/copied", "--overwrite")},
			{what: "give an untracked object a self-referencing id", refused: "would gain Argo CD's ownership", do: func(ctx context.Context) error {
				return mergePatch(ctx, mallory, argoAppsNS, "argo-bait", `{"metadata":{"annotations":`+strings.ReplaceAll(selfID, "forged", "argo-bait")+`}}`)
			}},
		},
	}, {
		name: "MarkForPruningThenDelete",
		steps: []step{
			{what: "mark the Deployment for pruning in the Application's status.resources", refused: "Application argocd/guestbook's status.resources is Argo CD's record of the objects it manages",
				kubectl: []string{"-n", argoNS, "patch", "application", "guestbook", "--type=json", "-p", `[{"op":"add","path":"/status/resources/1/requiresPruning","value":true}]`}},
			{what: "then delete it", refused: "Deleting it is refused: Argo CD would re-create it.", kubectl: in("delete", "deployment", "guestbook-ui", "--wait=false")},
		},
	}, {
		name: "DeletesOfEveryKind",
		steps: []step{
			{what: "delete the Deployment", refused: deleting, kubectl: in("delete", "deployment", "guestbook-ui", "--wait=false")},
			{what: "delete the Service with a uid precondition", refused: deleting, do: func(ctx context.Context) error {
				svc := &corev1.Service{}
				if err := mallory.Get(ctx, client.ObjectKey{Namespace: argoAppsNS, Name: "guestbook-ui"}, svc); err != nil {
					return err
				}
				return mallory.Delete(ctx, svc, client.Preconditions{UID: &svc.UID})
			}},
			{what: "delete what Argo CD would prune", allowed: "status.resources lists it with requiresPruning: it is no longer in Git", kubectl: in("delete", "configmap", "retired", "--wait=false")},
		},
	}})

	t.Run("ArgoCDServerAsItself", func(t *testing.T) {
		server, err := env.As(argoServer)
		if err != nil {
			t.Fatal(err)
		}
		err = server.Patch(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: argoAppsNS, Name: "guestbook-ui"}}, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"ui":"edit"}}}`)))
		// A person's edit through the UI, of a label Git does not declare.
		if err == nil || !strings.Contains(err.Error(), argocdguardHook) || !strings.Contains(err.Error(), "Changed: /metadata/labels/ui, which Git does not declare") {
			t.Fatalf("argocd-server's edit: want it refused, got %v", err)
		}
	})

	t.Run("SkipReconcileAllowsWithAWarning", func(t *testing.T) {
		kubectlOK(t, ctx, "", "--as", "jane", "-n", argoNS, "annotate", "application", "guestbook", "argocd.argoproj.io/skip-reconcile=true")
		harness.Eventually(t, 10*time.Second, func() error {
			_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", argoAppsNS, "label", "service", "guestbook-ui", "incident=42", "--overwrite")
			if err != nil || !strings.Contains(stderr, "Argo CD Application argocd/guestbook has argocd.argoproj.io/skip-reconcile=true") {
				return fmt.Errorf("the edit while paused: %v %s", err, stderr)
			}
			return nil
		})
	})
}

// TestArgoCDInstalledAfterSteward: without Argo CD's CRDs argocdguard is
// idle (Steward stays ready, a tracked object's edit passes: no
// Application can own it), and once they are installed, with Steward
// running, the same edit is refused, without a restart.
func TestArgoCDInstalledAfterSteward(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	crd := readCRDFile(t, filepath.Join(root, "e2e", "upstream", "argocd", "3.6", "application-crd.yaml"))
	t.Cleanup(func() { upsertCRD(context.Background(), t, crd) })
	const ns = "argo-later"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "--as", argoController, "delete", "namespace", ns, "--wait=false")
	})

	if err := env.DeleteCRDs(ctx, t, 2*time.Minute, crd); err != nil {
		t.Fatal(err)
	}
	kubectlOK(t, ctx, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"later","namespace":"argo-later","annotations":{"argocd.argoproj.io/tracking-id":"later:/ConfigMap:argo-later/later"}}}`,
		"--as", argoController, "apply", "-f", "-")
	harness.Eventually(t, 30*time.Second, func() error {
		_, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ns, "label", "configmap", "later", "edited=yes", "--overwrite")
		return err
	})
	resp, err := http.Get(env.Steward.HealthURL("/readyz"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Steward without Argo CD's CRDs: /readyz is %d, want 200", resp.StatusCode)
	}

	upsertCRD(ctx, t, crd)
	app := `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"later","namespace":"argocd"},"spec":{"project":"default","source":{"repoURL":"https://github.com/example/later"},"destination":{"namespace":"argo-later","server":"https://kubernetes.default.svc"}}}`
	harness.Eventually(t, 60*time.Second, func() error {
		_, _, err := env.Kubectl(ctx, app, "--as", argoController, "apply", "-f", "-")
		return err
	})
	harness.Eventually(t, 60*time.Second, func() error {
		_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ns, "label", "configmap", "later", "edited=again", "--overwrite", "--dry-run=server")
		if err == nil || !strings.Contains(stderr, argocdguardHook+"argocdguard: ConfigMap argo-later/later is managed by Argo CD Application argocd/later") {
			return fmt.Errorf("the edit is not refused yet: %v %s", err, stderr)
		}
		return nil
	})
}
