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

// argoApp is an Application a test has the real Argo CD sync.
type argoApp struct {
	// name names the Application and its repository; ns is the
	// namespace it syncs into.
	name, ns string
	// files are the repository's first commit: path → content.
	files map[string]string
	// spec holds fields added to the Application's spec, settings keys
	// added to argocd-cm.
	spec     map[string]any
	settings map[string]string
	// setup, when set, runs once the namespace exists and Argo CD runs,
	// before the Application is created (the service accounts a sync
	// impersonates, say).
	setup func(ctx context.Context, t *testing.T)
}

// startRealArgoCD skips t unless the Makefile has built Argo CD.
// Otherwise it creates the namespace app.ns, starts Argo CD
// (harness.StartArgoCD) and a Git server, commits app.files as a
// repository's first commit, and creates the Application syncing its
// ./deploy into the namespace with automated sync, prune and self-heal
// (Argo CD's documented GitOps setup; pruning with Background
// propagation, as e2e runs no garbage collector); it waits until the
// Application is Synced. When t ends the Application is deleted with its
// resources' finalizer, so Argo CD prunes what it synced, while the
// controller still runs.
func startRealArgoCD(ctx context.Context, t *testing.T, app argoApp) *realArgoCD {
	t.Helper()
	if os.Getenv("ARGOCD") == "" {
		t.Skip("ARGOCD is not set: run through make, which builds Argo CD")
	}
	env.LogOnFailure(t)
	name, ns, files, spec := app.name, app.ns, app.files, app.spec
	testNamespace(t, ctx, ns)
	argo, err := env.StartArgoCD(ctx, t, app.settings)
	if err != nil {
		t.Fatal(err)
	}
	if app.setup != nil {
		app.setup(ctx, t)
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
	application := harness.ArgoCDApplication(name, s)
	application.SetFinalizers([]string{"resources-finalizer.argocd.argoproj.io/background"})
	if err := env.Client.Create(ctx, application.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteArgoApplication(t, application) })
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

// realArgoConfigMap and realArgoDeployment are the repositories'
// objects, in namespace ns.
func realArgoConfigMap(color, ns string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: ` + ns + `}
data: {color: ` + color + `}
`
}

func realArgoDeployment(image, ns string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ` + ns + `}
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
	ra := startRealArgoCD(ctx, t, argoApp{name: realArgoName, ns: realArgoNS, files: map[string]string{
		"deploy/web.yaml":      realArgoDeployment("ghcr.io/example/web:1", realArgoNS),
		"deploy/settings.yaml": realArgoConfigMap("blue", realArgoNS),
	}})
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
		wantEditRefused(ctx, t, realArgoNS, argocdguardHook+"argocdguard: ConfigMap "+realArgoNS+"/settings is managed by Argo CD Application "+harness.ArgoCDNamespace+"/"+realArgoName, "/data/color")
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
			"deploy/web.yaml":      realArgoDeployment("ghcr.io/example/web:2", realArgoNS),
			"deploy/settings.yaml": realArgoConfigMap("green", realArgoNS),
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

	// With Steward stopped or hung, Argo CD's syncs never wait for it
	// (its controller is left out of every entry's matchConditions), and
	// a person's edit still fails closed.
	colors := map[string]string{"stopped": "orange", "hung": "purple"}
	for _, outage := range []string{"stopped", "hung"} {
		t.Run("ArgoCDSyncsWhileStewardIs"+outage, func(t *testing.T) {
			keepStewardRunning(t)
			bringBack := takeDown(t, ctx, outage)
			defer bringBack()
			if _, err := ra.repo.Commit(ctx, "color "+colors[outage], map[string]string{
				"deploy/web.yaml":      realArgoDeployment("ghcr.io/example/web:2", realArgoNS),
				"deploy/settings.yaml": realArgoConfigMap(colors[outage], realArgoNS),
			}); err != nil {
				t.Fatal(err)
			}
			// No refresh is asked for: the refresh annotation is a write to
			// the Application, Argo CD's record, which fails closed while
			// Steward is down. Argo CD finds the commit at its own resync
			// (timeout.reconciliation, 10 s here).
			harness.Eventually(t, 2*time.Minute, func() error {
				cm := &corev1.ConfigMap{}
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(settings), cm); err != nil {
					return err
				}
				if got := cm.Data["color"]; got != colors[outage] {
					return fmt.Errorf("with Steward %s, the color is %q, not yet Git's %s", outage, got, colors[outage])
				}
				return nil
			})
			_, stderr, err := env.Kubectl(ctx, "", "--as", "alice", "-n", realArgoNS, "patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"color":"red"}}`)
			if err == nil || !strings.Contains(stderr, "failed calling webhook") {
				t.Errorf("with Steward %s, a person's edit of Git's field: %v %s; want it to fail closed", outage, err, stderr)
			}
		})
	}

	t.Run("NoWriteOfArgoCDIsRefused", func(t *testing.T) {
		wantArgoCDWrites(t, realArgoNS, "patch configmaps/settings", "delete configmaps/settings")
	})
}

// wantArgoCDWrites reads the audit log for the writes Argo CD's
// application controller made in namespace ns: none may have been refused
// (a 404 is a read of what is gone), and each of want ("<verb>
// <resource>/<name>") must be among them.
func wantArgoCDWrites(t *testing.T, ns string, want ...string) {
	t.Helper()
	controller := "system:serviceaccount:" + harness.ArgoCDNamespace + ":" + harness.ArgoCDController
	events, err := env.AuditEvents(func(ev harness.AuditEvent) bool {
		return ev.User.Username == controller && ev.ObjectRef != nil && ev.ObjectRef.Namespace == ns
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
	for _, w := range want {
		if !writes[w] {
			t.Errorf("the audit log has no successful %q by %s; it has %v", w, controller, writes)
		}
	}
}

// The sync-impersonation test's Application, its namespace and the
// service account its AppProject names for it.
const (
	impName    = "realargocd-imp"
	impNS      = "realargocd-imp"
	impAccount = "deployer"
	impProject = "tenants"
)

// impersonationConfig trusts the service account an AppProject names for
// an Application's destination with that Application's objects.
const impersonationConfig = harness.DefaultConfig + `rules:
  argocdguard:
    syncImpersonation: true
`

// TestRealArgoCDSyncImpersonation runs the real Argo CD with sync
// impersonation on (argocd-cm application.sync.impersonation.enabled),
// whose syncs write as the service account the AppProject's
// destinationServiceAccounts names: with argocdguard's syncImpersonation,
// Argo CD syncs and self-heals as that account, and a person's edit is
// still refused; without it, Steward refuses the impersonated sync of a
// change to Git's fields, as it refuses any other service account's.
func TestRealArgoCDSyncImpersonation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	keepStewardRunning(t)
	restoreDefaultSteward(t)
	if _, err := env.RestartSteward(ctx, impersonationConfig); err != nil {
		t.Fatal(err)
	}
	account := "system:serviceaccount:" + impNS + ":" + impAccount
	ra := startRealArgoCD(ctx, t, argoApp{
		name: impName, ns: impNS,
		files: map[string]string{
			"deploy/web.yaml":      realArgoDeployment("ghcr.io/example/web:1", impNS),
			"deploy/settings.yaml": realArgoConfigMap("blue", impNS),
		},
		spec:     map[string]any{"project": impProject},
		settings: map[string]string{"application.sync.impersonation.enabled": "true"},
		setup: func(ctx context.Context, t *testing.T) {
			// The tenant's service account may edit its namespace only,
			// and the project names it for the namespace.
			kubectlOK(t, ctx, "", "-n", impNS, "create", "serviceaccount", impAccount)
			kubectlOK(t, ctx, "", "-n", impNS, "create", "rolebinding", impAccount, "--clusterrole=admin", "--serviceaccount="+impNS+":"+impAccount)
			kubectlOK(t, ctx, `apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: `+impProject+`, namespace: `+harness.ArgoCDNamespace+`}
spec:
  sourceRepos: ["*"]
  destinations: [{server: "*", namespace: `+impNS+`}]
  destinationServiceAccounts: [{server: "*", namespace: `+impNS+`, defaultServiceAccount: `+impAccount+`}]
`, "apply", "-f", "-")
			t.Cleanup(func() {
				_, _, _ = env.Kubectl(context.Background(), "", "-n", harness.ArgoCDNamespace, "delete", "appproject", impProject, "--wait=false")
			})
		},
	})
	settings := client.ObjectKey{Namespace: impNS, Name: "settings"}
	color := func(t *testing.T) string {
		got, _ := readField(ctx, t, corev1.SchemeGroupVersion.WithKind("ConfigMap"), settings, "data", "color")
		return got
	}

	t.Run("TheSyncWritesAsTheProjectsServiceAccount", func(t *testing.T) {
		events, err := env.AuditEvents(func(ev harness.AuditEvent) bool {
			return ev.Writer() == account && ev.ObjectRef != nil && ev.ObjectRef.Namespace == impNS && ev.Verb == "create"
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(events) == 0 {
			t.Fatalf("the audit log has no create by %s in %s: Argo CD did not impersonate it", account, impNS)
		}
		for _, ev := range events {
			if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 {
				t.Errorf("%s's %s of %s/%s was answered %d: %s", account, ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Name, ev.ResponseStatus.Code, ev.ResponseStatus.Message)
			}
		}
	})

	t.Run("APersonsEditIsStillRefused", func(t *testing.T) {
		harness.Eventually(t, 30*time.Second, func() error {
			_, stderr, err := env.Kubectl(ctx, "", "--as", "alice", "-n", impNS, "patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"color":"red"}}`, "--dry-run=server")
			if err == nil || !strings.Contains(stderr, argocdguardHook) {
				return fmt.Errorf("a person's edit is not refused: %v %s", err, stderr)
			}
			return nil
		})
	})

	t.Run("SelfHealAsTheServiceAccountIsAllowed", func(t *testing.T) {
		kubectlOK(t, ctx, "", "--as", "alice", "--as-group", "steward:break-glass", "-n", impNS, "patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"color":"red"}}`)
		if app, err := ra.argo.Refresh(ctx, ra.app); err != nil {
			t.Fatalf("%v\n%v", err, app)
		}
		if got := color(t); got != "blue" {
			t.Errorf("after the impersonated self-heal the color is %q, want Git's blue", got)
		}
	})

	t.Run("WithoutSyncImpersonationTheSyncIsRefused", func(t *testing.T) {
		if _, err := env.RestartSteward(ctx, harness.DefaultConfig); err != nil {
			t.Fatal(err)
		}
		if _, err := ra.repo.Commit(ctx, "green", map[string]string{"deploy/settings.yaml": realArgoConfigMap("green", impNS)}); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 2*time.Minute, func() error {
			if err := ra.argo.RequestRefresh(ctx, ra.app); err != nil {
				return err
			}
			events, err := env.AuditEvents(func(ev harness.AuditEvent) bool {
				return ev.Writer() == account && ev.ObjectRef != nil && ev.ObjectRef.Name == "settings" && ev.ResponseStatus != nil &&
					ev.ResponseStatus.Code == 403 && strings.Contains(ev.ResponseStatus.Message, "argocdguard")
			})
			if err != nil {
				return err
			}
			if len(events) == 0 {
				return fmt.Errorf("no refused write of %s to ConfigMap settings yet; its color is %q", account, color(t))
			}
			return nil
		})
		if got := color(t); got != "blue" {
			t.Errorf("the refused sync changed the color to %q", got)
		}
		// Argo CD prunes the Application's objects as the service account
		// too when the test deletes it.
		if _, err := env.RestartSteward(ctx, impersonationConfig); err != nil {
			t.Fatal(err)
		}
	})
}
