package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// realArgo is where the real Argo CD syncs the test's Git repository: the
// Application realArgoName (in harness.ArgoCDNamespace) and its namespace.
const (
	realArgoNS   = "realargocd"
	realArgoName = "realargocd"
)

// realArgoCD is Argo CD's application controller and repo server syncing
// one Application from a Git repository served from 127.0.0.1.
type realArgoCD struct {
	argo *harness.ArgoCD
	repo *harness.GitRepo
	app  string
	// synced is the Application as its first sync left it.
	synced *unstructured.Unstructured
}

// startRealArgoCD skips t unless the Makefile has built Argo CD.
// Otherwise it creates namespace ns, starts Argo CD (harness.StartArgoCD)
// and a Git server, commits files as a repository's first commit, and
// creates the Application name syncing its ./deploy into ns with
// automated sync, prune and self-heal (Argo CD's documented GitOps
// setup; pruning with Background propagation, as e2e runs no garbage
// collector), spec's fields added; it waits until the Application is
// Synced.
// When t ends the Application is deleted with its resources' finalizer,
// so Argo CD prunes what it synced, while the controller still runs.
func startRealArgoCD(ctx context.Context, t *testing.T, name, ns string, files map[string]string, spec map[string]any) *realArgoCD {
	t.Helper()
	if os.Getenv("ARGOCD") == "" {
		t.Skip("ARGOCD is not set: run through make, which builds Argo CD")
	}
	env.LogOnFailure(t)
	testNamespace(t, ctx, ns)
	argo, err := env.StartArgoCD(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	git, err := env.StartGitServer(t)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := git.NewRepo(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit(ctx, "the first commit", files); err != nil {
		t.Fatal(err)
	}
	s := map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": repo.URL, "path": "deploy", "targetRevision": repo.Branch},
		"destination": map[string]any{"server": argo.Server, "namespace": ns},
		// Argo CD prunes with Foreground propagation by default, which
		// leaves the object to the garbage collector; e2e runs none, so
		// the Application asks for Background, and its finalizer below
		// for the same.
		"syncPolicy": map[string]any{
			"automated":   map[string]any{"prune": true, "selfHeal": true},
			"syncOptions": []any{"PrunePropagationPolicy=background"},
		},
	}
	for k, v := range spec {
		s[k] = v
	}
	app := harness.ArgoCDApplication(name, s)
	app.SetFinalizers([]string{"resources-finalizer.argocd.argoproj.io/background"})
	if err := env.Client.Create(ctx, app.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteArgoApplication(t, app) })
	synced, err := argo.WaitSynced(ctx, name, 3*time.Minute)
	if err != nil {
		t.Fatalf("%v\n--- argocd-application-controller log ---\n%s", err, tail(argo.Log("argocd-application-controller"), 40))
	}
	return &realArgoCD{argo: argo, repo: repo, app: name, synced: synced}
}

// deleteArgoApplication deletes app and waits until Argo CD has pruned its
// resources and removed its finalizer.
func deleteArgoApplication(t *testing.T, app *unstructured.Unstructured) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := client.IgnoreNotFound(env.Client.Delete(ctx, app.DeepCopy())); err != nil {
		t.Error(err)
		return
	}
	if err := harness.Poll(ctx, time.Minute, func() error {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), app.DeepCopy())
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("Application %s is still there (%v)", app.GetName(), err)
	}); err != nil {
		t.Error(err)
	}
}

func realArgoConfigMap(color string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: ` + realArgoNS + `}
data: {color: ` + color + `}
`
}

func realArgoDeployment(image string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ` + realArgoNS + `}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "` + image + `"}]}
`
}

// TestRealArgoCD runs Argo CD's own application controller and repo
// server against the API server, with Steward's rendered webhooks
// registered, on a Git repository served from 127.0.0.1: what Argo CD
// syncs carries its tracking id and is guarded (a person's edit is
// refused), a break-glass edit is reverted by self-heal, a new commit is
// synced, an object removed from Git is pruned, and none of Argo CD's
// writes is refused or sent to Steward.
func TestRealArgoCD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ra := startRealArgoCD(ctx, t, realArgoName, realArgoNS, map[string]string{
		"deploy/web.yaml":      realArgoDeployment("ghcr.io/example/web:1"),
		"deploy/settings.yaml": realArgoConfigMap("blue"),
	}, nil)
	deploy := &appsv1.Deployment{}
	settings := &corev1.ConfigMap{}
	for name, obj := range map[string]client.Object{"web": deploy, "settings": settings} {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: realArgoNS, Name: name}, obj); err != nil {
			t.Fatalf("Argo CD reported Synced, but: %v", err)
		}
		if got := obj.GetAnnotations()["argocd.argoproj.io/tracking-id"]; !strings.HasPrefix(got, realArgoName+":") {
			t.Errorf("%T %s: tracking id %q, want one naming Application %s", obj, name, got, realArgoName)
		}
		logManagedFields(t, fmt.Sprintf("%T %s as synced", obj, name), obj)
	}

	t.Run("APersonsEditIsRefused", func(t *testing.T) {
		patch := []string{"--as", "alice", "-n", realArgoNS, "patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"color":"red"}}`}
		want := argocdguardHook + "argocdguard: ConfigMap " + realArgoNS + "/settings is managed by Argo CD Application " + harness.ArgoCDNamespace + "/" + realArgoName
		harness.Eventually(t, 30*time.Second, func() error {
			_, stderr, err := env.Kubectl(ctx, "", append(patch, "--dry-run=server")...)
			if err == nil || !strings.Contains(stderr, want) {
				return fmt.Errorf("the edit is not refused yet: %v %s", err, stderr)
			}
			return nil
		})
		_, stderr, err := env.Kubectl(ctx, "", patch...)
		if err == nil || !strings.Contains(stderr, want) || !strings.Contains(stderr, "/data/color") {
			t.Fatalf("want argocdguard's denial %q of /data/color, got %v: %s", want, err, stderr)
		}
	})

	t.Run("ABreakGlassEditIsRevertedBySelfHeal", func(t *testing.T) {
		kubectlOK(t, ctx, "", "--as", "alice", "--as-group", "steward:break-glass", "-n", realArgoNS, "patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"color":"red"}}`)
		if _, err := ra.argo.Refresh(ctx, ra.app); err != nil {
			t.Fatal(err)
		}
		if got, _ := readField(ctx, t, corev1.SchemeGroupVersion.WithKind("ConfigMap"), client.ObjectKey{Namespace: realArgoNS, Name: "settings"}, "data", "color"); got != "blue" {
			t.Errorf("after self-heal the ConfigMap's color is %q, want Git's blue", got)
		}
	})

	t.Run("ANewCommitIsSynced", func(t *testing.T) {
		if _, err := ra.repo.Commit(ctx, "web 2, green", map[string]string{
			"deploy/web.yaml":      realArgoDeployment("ghcr.io/example/web:2"),
			"deploy/settings.yaml": realArgoConfigMap("green"),
		}); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 2*time.Minute, func() error {
			if _, err := ra.argo.Refresh(ctx, ra.app); err != nil {
				return err
			}
			got, _ := readField(ctx, t, appsv1.SchemeGroupVersion.WithKind("Deployment"), client.ObjectKey{Namespace: realArgoNS, Name: "web"}, "spec", "template", "spec", "containers", "0", "image")
			if got != "ghcr.io/example/web:2" {
				return fmt.Errorf("the Deployment's image is %s, want Git's ghcr.io/example/web:2", got)
			}
			return nil
		})
	})

	t.Run("AnObjectRemovedFromGitIsPruned", func(t *testing.T) {
		if _, err := ra.repo.Commit(ctx, "no settings", nil, "deploy/settings.yaml"); err != nil {
			t.Fatal(err)
		}
		if app, err := ra.argo.Refresh(ctx, ra.app); err != nil {
			t.Fatalf("%v\n%v", err, app)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(settings), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("the ConfigMap removed from Git is still there (%v)", err)
		}
	})

	t.Run("NoWriteOfArgoCDIsRefused", func(t *testing.T) {
		controller := "system:serviceaccount:" + harness.ArgoCDNamespace + ":" + harness.ArgoCDController
		events, err := env.AuditEvents(func(ev harness.AuditEvent) bool {
			return ev.User.Username == controller && ev.ObjectRef != nil && ev.ObjectRef.Namespace == realArgoNS
		})
		if err != nil {
			t.Fatal(err)
		}
		writes := map[string]bool{}
		for _, ev := range events {
			if ev.Verb == "get" || ev.Verb == "list" || ev.Verb == "watch" {
				continue
			}
			if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 && ev.ResponseStatus.Code != http.StatusNotFound {
				t.Errorf("%s %s %s/%s by %s was answered %d: %s", ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Namespace, ev.ObjectRef.Name, ev.User.Username, ev.ResponseStatus.Code, ev.ResponseStatus.Message)
				continue
			}
			writes[ev.Verb+" "+ev.ObjectRef.Resource+"/"+ev.ObjectRef.Name] = true
		}
		t.Logf("Argo CD's writes: %v", writes)
		for _, w := range []string{"patch configmaps/settings", "delete configmaps/settings"} {
			if !writes[w] {
				t.Errorf("the audit log has no successful %q by %s; it has %v", w, controller, writes)
			}
		}
	})
}
