package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// realFluxNS is where the real kustomize-controller applies the test's Git
// repository; the Kustomization and the GitRepository, both named
// realFluxName, are in harness.FluxNamespace.
const (
	realFluxNS   = "realflux"
	realFluxName = "realflux"
)

// realFluxDeployment and realFluxConfigMap are the repository's objects.
// The Deployment declares replicas only when replicas is set, else they
// are left to whoever scales it.
func realFluxDeployment(image string, replicas int32) string {
	declared := ""
	if replicas > 0 {
		declared = fmt.Sprintf("  replicas: %d\n", replicas)
	}
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ` + realFluxNS + `}
spec:
` + declared + `  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "` + image + `"}]}
`
}

func realFluxConfigMap(color string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: ` + realFluxNS + `}
data: {color: ` + color + `}
`
}

// TestRealFlux runs Flux's own source- and kustomize-controller (and
// helm-controller beside them) against the API server, with Steward's
// rendered webhooks registered, on a Git repository served from
// 127.0.0.1: what kustomize-controller applies carries Flux's labels and
// is guarded (a person's edit is refused), a new commit is applied, what
// a reconcile does with others' edits is what the guards say it does, an
// object removed from Git is pruned, and none of the controllers' writes
// is refused.
func TestRealFlux(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rf := startRealFlux(ctx, t, realFluxName, realFluxNS, map[string]string{
		"deploy/web.yaml":      realFluxDeployment("ghcr.io/example/web:1", 0),
		"deploy/settings.yaml": realFluxConfigMap("blue"),
	}, nil, harness.FluxOptions{})
	flux, repo, source, kustomization := rf.Flux, rf.Repo, rf.Source, rf.Kustomization
	wantApplied(t, rf.Applied, rf.Rev)
	deploy := &appsv1.Deployment{}
	settings := &corev1.ConfigMap{}
	for name, obj := range map[string]client.Object{"web": deploy, "settings": settings} {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: realFluxNS, Name: name}, obj); err != nil {
			t.Fatalf("kustomize-controller reported Ready, but: %v", err)
		}
		for k, v := range map[string]string{"kustomize.toolkit.fluxcd.io/name": realFluxName, "kustomize.toolkit.fluxcd.io/namespace": harness.FluxNamespace} {
			if got := obj.GetLabels()[k]; got != v {
				t.Errorf("%T %s: label %s is %q, want %q", obj, name, k, got, v)
			}
		}
		logManagedFields(t, fmt.Sprintf("%T %s as applied", obj, name), obj)
	}
	if !hasManager(deploy, "kustomize-controller", metav1.ManagedFieldsOperationApply, "") {
		t.Errorf("the Deployment has no server-side apply entry of kustomize-controller: %v", managers(deploy))
	}

	t.Run("APersonsEditIsRefused", func(t *testing.T) {
		wantEditRefused(ctx, t, realFluxNS, fluxguardHook+"fluxguard: ConfigMap "+realFluxNS+"/settings is managed by Flux Kustomization "+harness.FluxNamespace+"/"+realFluxName, "Changed: /data/color.")
	})

	t.Run("ANewCommitIsApplied", func(t *testing.T) {
		rev, err := repo.Commit(ctx, "web 2, green", map[string]string{
			"deploy/web.yaml":      realFluxDeployment("ghcr.io/example/web:2", 0),
			"deploy/settings.yaml": realFluxConfigMap("green"),
		})
		if err != nil {
			t.Fatal(err)
		}
		wantApplied(t, reconcileSourceAndKustomization(ctx, t, flux, source, kustomization), rev)
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(deploy), deploy); err != nil {
			t.Fatal(err)
		}
		if got := deploy.Spec.Template.Spec.Containers[0].Image; got != "ghcr.io/example/web:2" {
			t.Errorf("the Deployment's image is %s, want Git's ghcr.io/example/web:2", got)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(settings), settings); err != nil {
			t.Fatal(err)
		}
		if got := settings.Data["color"]; got != "green" {
			t.Errorf("the ConfigMap's color is %q, want Git's green", got)
		}
	})

	t.Run("WhatAReconcileDoesToOthersEdits", func(t *testing.T) {
		othersEditsAfterAReconcile(ctx, t, flux, repo, source, kustomization)
	})

	t.Run("AnObjectRemovedFromGitIsPruned", func(t *testing.T) {
		rev, err := repo.Commit(ctx, "no settings", nil, "deploy/settings.yaml")
		if err != nil {
			t.Fatal(err)
		}
		wantApplied(t, reconcileSourceAndKustomization(ctx, t, flux, source, kustomization), rev)
		harness.Eventually(t, 30*time.Second, func() error {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(settings), &corev1.ConfigMap{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("the ConfigMap removed from Git is still there (%v)", err)
		})
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(deploy), &appsv1.Deployment{}); err != nil {
			t.Errorf("the Deployment still in Git: %v", err)
		}
	})

	t.Run("NoWriteOfFluxIsRefused", func(t *testing.T) {
		events, err := env.AuditEvents(func(ev harness.AuditEvent) bool {
			return strings.HasPrefix(ev.User.Username, "system:serviceaccount:"+harness.FluxNamespace+":") && ev.ObjectRef != nil &&
				(ev.ObjectRef.Namespace == realFluxNS || ev.ObjectRef.Namespace == harness.FluxNamespace && ev.ObjectRef.Name == realFluxName)
		})
		if err != nil {
			t.Fatal(err)
		}
		writes := map[string]bool{}
		for _, ev := range events {
			if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 {
				answer := fmt.Sprintf("%s %s %s/%s/%s by %s was answered %d: %s", ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Namespace, ev.ObjectRef.Name, ev.ObjectRef.Subresource,
					ev.User.Username, ev.ResponseStatus.Code, ev.ResponseStatus.Message)
				// A conflict refuses nothing: the controller wrote over a
				// resourceVersion another write (this test's reconcile
				// request) had moved on, and writes again.
				if ev.ResponseStatus.Code == http.StatusConflict && strings.Contains(ev.ResponseStatus.Message, "the object has been modified") {
					t.Logf("%s (a conflict, written again)", answer)
				} else {
					t.Error(answer)
				}
				continue
			}
			writes[ev.User.Username+" "+ev.Verb+" "+ev.ObjectRef.Resource+"/"+ev.ObjectRef.Name] = true
		}
		// The audit log holds the writes this test saw take effect, so
		// the check above looked at them.
		kustomize := harness.FluxControllerUser("kustomize-controller")
		for _, w := range []string{kustomize + " patch deployments/web", kustomize + " delete configmaps/settings", kustomize + " patch kustomizations/" + realFluxName} {
			if !writes[w] {
				t.Errorf("the audit log has no successful %q; it has %v", w, writes)
			}
		}
	})
}

// wantEditRefused has a person patch the data.color of ConfigMap settings
// in ns, once Steward's cache knows its owner (a moment after the API
// server: a server dry run says so), and fails t unless the denial says
// want and names the change.
func wantEditRefused(ctx context.Context, t *testing.T, ns, want, change string) {
	t.Helper()
	patch := []string{"--as", "alice", "-n", ns, "patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"color":"red"}}`}
	harness.Eventually(t, 30*time.Second, func() error {
		_, stderr, err := env.Kubectl(ctx, "", append(patch, "--dry-run=server")...)
		if err == nil || !strings.Contains(stderr, want) {
			return fmt.Errorf("the edit is not refused yet: %v %s", err, stderr)
		}
		return nil
	})
	_, stderr, err := env.Kubectl(ctx, "", patch...)
	if err == nil || !strings.Contains(stderr, want) || !strings.Contains(stderr, change) {
		t.Fatalf("want the denial %q of %s, got %v: %s", want, change, err, stderr)
	}
}

// realFlux is Flux's controllers applying a Git repository of their own
// (harness.StartFluxRepo).
type realFlux = harness.FluxRepo

// startRealFlux skips t unless the Makefile has built the Flux controllers
// flux chooses. Otherwise it creates namespace ns and starts Flux on a
// repository named name whose first commit is files, with
// kustomizationSpec's fields added to the Kustomization's spec
// (harness.StartFluxRepo). When t ends the Flux objects are deleted, the
// controllers stop, then the environment's Flux CRDs are put back.
func startRealFlux(ctx context.Context, t *testing.T, name, ns string, files map[string]string, kustomizationSpec map[string]any, flux harness.FluxOptions) *realFlux {
	t.Helper()
	skipWithoutFlux(t, flux)
	env.LogOnFailure(t)
	// Cleanups run last first.
	t.Cleanup(restoreEnvironmentFluxCRDs(t))
	testNamespace(t, ctx, ns)
	rf, err := env.StartFluxRepo(ctx, t, harness.FluxRepoOptions{Name: name, Files: files, Kustomization: kustomizationSpec, Flux: flux})
	if err != nil {
		t.Fatal(err)
	}
	return rf
}

// skipWithoutFlux skips t unless the Makefile has built the Flux
// controllers o chooses (their variables are set).
func skipWithoutFlux(t *testing.T, o harness.FluxOptions) {
	t.Helper()
	vars, err := harness.FluxBinaryVars(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range slices.Sorted(maps.Values(vars)) {
		if os.Getenv(v) == "" {
			t.Skipf("%s is not set: run through make, which builds Flux's controllers", v)
		}
	}
}

// reconcileSourceAndKustomization has source-controller fetch the newest
// commit, then kustomize-controller apply it, as `flux reconcile
// kustomization --with-source` does, and returns the Kustomization as
// that left it.
func reconcileSourceAndKustomization(ctx context.Context, t *testing.T, flux *harness.Flux, source, kustomization *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	if _, err := flux.ForceReconcile(ctx, source); err != nil {
		t.Fatal(err)
	}
	applied, err := flux.ForceReconcile(ctx, kustomization)
	if err != nil {
		t.Fatal(err)
	}
	return applied
}

// wantApplied fails unless the Kustomization is Ready with the commit rev
// applied.
func wantApplied(t *testing.T, kustomization *unstructured.Unstructured, rev string) {
	t.Helper()
	if ready := harness.FluxReady(kustomization); !strings.HasPrefix(ready, "Ready=True ") {
		t.Fatalf("the Kustomization is not Ready: %s", ready)
	}
	got, _, _ := unstructured.NestedString(kustomization.Object, "status", "lastAppliedRevision")
	if want := "main@sha1:" + rev; got != want {
		t.Fatalf("the Kustomization's lastAppliedRevision is %q, want %q", got, want)
	}
}

// managers lists obj's managedFields entries as manager/operation[/subresource].
func managers(obj client.Object) []string {
	var out []string
	for _, m := range obj.GetManagedFields() {
		s := m.Manager + "/" + string(m.Operation)
		if m.Subresource != "" {
			s += "/" + m.Subresource
		}
		out = append(out, s)
	}
	return out
}

// hasManager says whether obj has a managedFields entry of manager with
// operation op on subresource ("" for the object itself).
func hasManager(obj client.Object, manager string, op metav1.ManagedFieldsOperationType, subresource string) bool {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == manager && m.Operation == op && m.Subresource == subresource {
			return true
		}
	}
	return false
}

// logManagedFields logs obj's managedFields entries with the fields each
// owns, as kubectl get --show-managed-fields prints them.
func logManagedFields(t *testing.T, what string, obj client.Object) {
	t.Helper()
	var b strings.Builder
	for _, m := range obj.GetManagedFields() {
		fields := "{}"
		if m.FieldsV1 != nil {
			fields = m.FieldsV1.GetRawString()
		}
		fmt.Fprintf(&b, "\n  manager=%s operation=%s subresource=%q apiVersion=%s fields=%s", m.Manager, m.Operation, m.Subresource, m.APIVersion, fields)
	}
	t.Logf("%s: managedFields:%s", what, b.String())
}

// othersEdit is a write by someone other than Flux to what it applied,
// and what kustomize-controller's next reconcile did with it.
type othersEdit struct {
	what string
	// user writes as user, in groups when set: people as members of the
	// break-glass group, as Steward refuses their edits otherwise.
	user   string
	groups []string
	write  func(c client.Client) error
	// outcome reads what the reconcile left: "kept", "reverted" (to
	// Git's value) or "stripped" (a field Git does not declare, gone).
	outcome func(d *appsv1.Deployment, cm *corev1.ConfigMap) string
	want    string
}

// othersEditsRound is edits made together, once Git's Deployment
// declares gitReplicas (none when zero), then one reconcile.
type othersEditsRound struct {
	gitReplicas int32
	edits       []othersEdit
}

// othersEditsAfterAReconcile makes, as the people and controllers that
// make them, the edits the GitOps guards judge, then has
// kustomize-controller reconcile, and checks what became of each: fields
// Git declares are reverted, fields it does not are kept, but those a
// kubectl field manager wrote outside a subresource are stripped. It logs
// the managedFields entries each write left, and the table of outcomes.
func othersEditsAfterAReconcile(ctx context.Context, t *testing.T, flux *harness.Flux, repo *harness.GitRepo, source, kustomization *unstructured.Unstructured) {
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: realFluxNS, Name: name} }
	read := func() (*appsv1.Deployment, *corev1.ConfigMap) {
		d, cm := &appsv1.Deployment{}, &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, key("web"), d); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(ctx, key("settings"), cm); err != nil {
			t.Fatal(err)
		}
		return d, cm
	}
	kubectl := func(args ...string) func(client.Client) error {
		return func(client.Client) error {
			_, _, err := env.Kubectl(ctx, "", append([]string{"--as", "bob", "--as-group", breakGlass, "-n", realFluxNS}, args...)...)
			return err
		}
	}
	// autoscale writes replicas through /scale as the autoscaler does
	// (kube-controller-manager's field manager, an Update).
	autoscale := func(replicas int32) func(client.Client) error {
		return func(c client.Client) error { return scaleAs(ctx, c, realFluxNS, "web", replicas) }
	}
	replicasAre := func(n int32) func(*appsv1.Deployment, *corev1.ConfigMap) string {
		return func(d *appsv1.Deployment, _ *corev1.ConfigMap) string {
			return keptIf(d.Spec.Replicas != nil && *d.Spec.Replicas == n, "reverted")
		}
	}
	const hpa = "system:serviceaccount:kube-system:horizontal-pod-autoscaler"
	const reloader = "system:serviceaccount:reloader:reloader"
	const reloaded = "reloader.stakater.com/last-reloaded-from"
	rounds := []othersEditsRound{{edits: []othersEdit{
		{what: "the autoscaler's /scale of replicas Git does not declare", user: hpa, write: autoscale(3), outcome: replicasAre(3), want: "kept"},
		{
			what: "an operator's server-side apply of a pod-template annotation", user: reloader,
			write: func(c client.Client) error {
				patch := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"` + realFluxNS + `"},` +
					`"spec":{"template":{"metadata":{"annotations":{"` + reloaded + `":"settings"}}}}}`
				return c.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: realFluxNS}}, client.RawPatch(types.ApplyPatchType, []byte(patch)),
					client.FieldOwner("reloader"), client.ForceOwnership)
			},
			outcome: func(d *appsv1.Deployment, _ *corev1.ConfigMap) string {
				return keptIf(d.Spec.Template.Annotations[reloaded] == "settings", "stripped")
			},
			want: "kept",
		},
		{
			what: "a person's kubectl annotate of a new annotation", user: "bob", groups: []string{breakGlass},
			write: kubectl("annotate", "deployment", "web", "team=payments"),
			outcome: func(d *appsv1.Deployment, _ *corev1.ConfigMap) string {
				return keptIf(d.Annotations["team"] == "payments", "stripped")
			},
			want: "stripped",
		},
		{
			what: "a person's edit of a ConfigMap key Git declares", user: "bob", groups: []string{breakGlass},
			write: func(c client.Client) error {
				return mergePatchAs(ctx, c, "kubectl-edit", realFluxNS, "settings", `{"data":{"color":"purple"}}`)
			},
			outcome: func(_ *appsv1.Deployment, cm *corev1.ConfigMap) string {
				return keptIf(cm.Data["color"] == "purple", "reverted")
			},
			want: "reverted",
		},
		{
			what: "a person's kubectl set image", user: "bob", groups: []string{breakGlass},
			write: kubectl("set", "image", "deployment/web", "web=ghcr.io/example/web:hotfix"),
			outcome: func(d *appsv1.Deployment, _ *corev1.ConfigMap) string {
				return keptIf(d.Spec.Template.Spec.Containers[0].Image == "ghcr.io/example/web:hotfix", "reverted")
			},
			want: "reverted",
		},
	}}, {edits: []othersEdit{
		// After the autoscaler's, in a round of its own: both write
		// replicas.
		{what: "a person's kubectl scale of replicas Git does not declare", user: "bob", groups: []string{breakGlass},
			write: kubectl("scale", "deployment", "web", "--replicas=5"), outcome: replicasAre(5), want: "kept"},
	}}, {gitReplicas: 2, edits: []othersEdit{
		{what: "a person's kubectl scale of replicas Git declares", user: "bob", groups: []string{breakGlass},
			write: kubectl("scale", "deployment", "web", "--replicas=4"), outcome: replicasAre(4), want: "reverted"},
	}}, {gitReplicas: 2, edits: []othersEdit{
		{what: "the autoscaler's /scale of replicas Git declares", user: hpa, write: autoscale(6), outcome: replicasAre(6), want: "reverted"},
	}}}
	var table strings.Builder
	declared := int32(0)
	for i, round := range rounds {
		if round.gitReplicas != declared {
			declared = round.gitReplicas
			rev, err := repo.Commit(ctx, fmt.Sprintf("web: %d replicas", round.gitReplicas), map[string]string{
				"deploy/web.yaml": realFluxDeployment("ghcr.io/example/web:2", round.gitReplicas),
			})
			if err != nil {
				t.Fatal(err)
			}
			wantApplied(t, reconcileSourceAndKustomization(ctx, t, flux, source, kustomization), rev)
		}
		recorded := make([]string, len(round.edits))
		for j, edit := range round.edits {
			c, err := env.As(edit.user, edit.groups...)
			if err != nil {
				t.Fatal(err)
			}
			d, cm := read()
			before := append(managers(d), managers(cm)...)
			if err := edit.write(c); err != nil {
				t.Fatalf("%s as %s: %v", edit.what, edit.user, err)
			}
			d, cm = read()
			recorded[j] = strings.Join(added(before, append(managers(d), managers(cm)...)), ", ")
			if recorded[j] == "" {
				recorded[j] = "(no new managedFields entry)"
			}
		}
		d, _ := read()
		logManagedFields(t, fmt.Sprintf("round %d: the Deployment after the edits", i+1), d)
		if _, err := flux.ForceReconcile(ctx, kustomization); err != nil {
			t.Fatal(err)
		}
		d, cm := read()
		logManagedFields(t, fmt.Sprintf("round %d: the Deployment after kustomize-controller's reconcile", i+1), d)
		for j, edit := range round.edits {
			got := edit.outcome(d, cm)
			who := edit.user
			if len(edit.groups) > 0 {
				who += " (" + strings.Join(edit.groups, ", ") + ")"
			}
			fmt.Fprintf(&table, "\n  %-60s as %-58s recorded %-45s %s", edit.what, who, recorded[j], got)
			if got != edit.want {
				t.Errorf("%s: %s after kustomize-controller's reconcile, want %s", edit.what, got, edit.want)
			}
		}
	}
	t.Logf("what kustomize-controller's reconcile did with others' edits:%s", table.String())
}

// added lists what is in after and not in before.
func added(before, after []string) []string {
	var out []string
	for _, a := range after {
		if !slices.Contains(before, a) {
			out = append(out, a)
		}
	}
	return out
}

// keptIf is "kept" when kept, else otherwise.
func keptIf(kept bool, otherwise string) string {
	if kept {
		return "kept"
	}
	return otherwise
}

// mergePatchAs merge-patches ConfigMap name as c, under field manager
// manager.
func mergePatchAs(ctx context.Context, c client.Client, manager, namespace, name, patch string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(manager))
}
