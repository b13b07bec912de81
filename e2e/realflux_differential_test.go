package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// update has the e2e tests rewrite what they generate from their run:
// docs/flux-differential.md (TestRealFluxDifferential).
var update = flag.Bool("update", false, "rewrite docs/flux-differential.md from TestRealFluxDifferential's run")

// differentialPage is the page TestRealFluxDifferential writes, from the
// repository's root.
const differentialPage = "docs/flux-differential.md"

// The differential test's Kustomization, GitRepository and namespace.
const (
	diffName = "realflux-diff"
	diffNS   = "realflux-diff"
	// diffPerson is the person whose edits the table makes.
	diffPerson = "bob"
	// diffImage is the image Git declares for the Deployments.
	diffImage = "ghcr.io/example/web:1"
)

// TestRealFluxDifferential makes each edit of diffRows to what the real
// kustomize-controller applied from Git, once with Steward's default
// configuration and once with fluxguard's undeclaredFields: mirror, and
// compares Steward's answer with what kustomize-controller's next
// reconcile does with the edit (runDifferential). The table of the two
// runs is docs/flux-differential.md (-update rewrites it). The audit then
// reports the autoscaler's fight kustomize-controller's record shows.
func TestRealFluxDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tool := &diffTool{
		name: "Flux", controller: "kustomize-controller", ns: diffNS, guard: "fluxguard", hook: fluxguardHook,
		page: differentialPage, ignore: "the Kustomization's `spec.ignore` lists", intro: fluxDiffIntro,
	}
	rows := tool.rows(t)
	files, ignore := tool.gitFiles(rows, func(base, pointer string) map[string]any {
		return map[string]any{"paths": []any{pointer}, "target": map[string]any{"kind": "ConfigMap", "name": base}}
	})
	rf := startRealFlux(ctx, t, diffName, diffNS, files, map[string]any{"ignore": ignore}, harness.FluxOptions{})
	wantApplied(t, rf.Applied, rf.Rev)
	tool.reconcile = func(ctx context.Context, t *testing.T) {
		applied, err := rf.Flux.ForceReconcile(ctx, rf.Kustomization)
		if err != nil {
			t.Fatal(err)
		}
		if ready := harness.FluxReady(applied); !strings.HasPrefix(ready, "Ready=True ") {
			t.Fatalf("kustomize-controller's reconcile failed: %s", ready)
		}
	}
	runDifferential(ctx, t, tool, rows)

	t.Run("TheAuditReportsTheAutoscalersFight", func(t *testing.T) {
		auditAutoscalerFights(ctx, t, rows)
	})
}

// auditAutoscalerFights gives the default run's Deployments an HPA each,
// after kustomize-controller's reconcile of them, and has `steward audit`
// judge them from what the real controller recorded: the Deployment whose
// replicas Git declares (kustomize-controller took them back from the
// HPA's scale) is reported as a fight with both values; the one whose
// replicas Git leaves out is not.
func auditAutoscalerFights(ctx context.Context, t *testing.T, rows []diffRow) {
	var fight, quiet string
	for _, r := range rows {
		switch r.slug {
		case "hpa-declared":
			fight = r.kind.objectName(r.base("default"))
		case "hpa":
			quiet = r.kind.objectName(r.base("default"))
		}
	}
	for _, name := range []string{fight, quiet} {
		kubectlOK(t, ctx, `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: `+name+`, namespace: `+diffNS+`}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: `+name+`}
  minReplicas: 1
  maxReplicas: 8
`, "apply", "-f", "-")
	}
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(harness.DefaultConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, _, err := harness.RunCommand(ctx, "audit", "--kubeconfig", env.Kubeconfig, "--config", config, "-o", "json")
	if err != nil {
		t.Fatalf("steward audit: %v\nstderr: %s", err, stderr)
	}
	var out struct {
		Findings []struct {
			Rule, Result, Message string
			Resource              struct{ Kind, Namespace, Name string }
			Properties            map[string]string
		}
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("steward audit -o json printed what is not JSON: %v\n%s", err, stdout)
	}
	found := map[string]string{}
	for _, f := range out.Findings {
		if f.Rule == "autoscaler-fight" && f.Resource.Kind == "Deployment" && f.Resource.Namespace == diffNS {
			found[f.Resource.Name] = f.Result + ": " + f.Message
		}
	}
	want := "warn: fluxguard: Deployment " + diffNS + "/" + fight + " is managed by Flux Kustomization flux-system/" + diffName
	if got := found[fight]; !strings.HasPrefix(got, want) || !strings.Contains(got, "Git declares spec.replicas (2) and HorizontalPodAutoscaler "+diffNS+"/"+fight) {
		t.Errorf("the fight over %s's replicas: got %q, want %q... with Git's 2 replicas; every fight found: %v", fight, got, want, found)
	}
	if got, ok := found[quiet]; ok {
		t.Errorf("%s, whose replicas Git does not declare, is reported as a fight: %s", quiet, got)
	}
}

// fluxDiffIntro is docs/flux-differential.md above its table.
func fluxDiffIntro(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`# What Flux does with an edit, and what Steward answers

<!-- Written by TestRealFluxDifferential (e2e/realflux_differential_test.go) from its run; ` +
		"`go test -p 1 -run TestRealFluxDifferential ./e2e -update`" + ` (with the environment of make e2e) rewrites it, and the test fails when its run differs from this page. -->

This page is the outcome of one end-to-end test. It runs Flux's own
controllers against a real API server with Steward's webhooks registered,
makes edits to what kustomize-controller applied, and compares what
Steward answers with what kustomize-controller's next reconcile does.

`)
	fmt.Fprintf(&b, "Versions: kustomize-controller %s and source-controller %s, with Flux %s's CRDs, on kube-apiserver %s.\n\n",
		moduleVersion(t, "KUSTOMIZE_CONTROLLER", "github.com/fluxcd/kustomize-controller"),
		moduleVersion(t, "SOURCE_CONTROLLER", "github.com/fluxcd/source-controller"), harness.FluxRelease, serverVersion(t))
	b.WriteString(`**What was run.** A Git repository is served from 127.0.0.1.
source-controller fetches it, and kustomize-controller applies it through
a Kustomization with ` + "`prune: true`" + `. Git holds Deployments that
declare their image (one declares ` + "`replicas: 2`" + ` too), ConfigMaps
that declare ` + "`data.color`" + ` (one is annotated
` + "`kustomize.toolkit.fluxcd.io/ssa: Merge`" + `, and the Kustomization's
` + "`spec.ignore`" + ` lists the ` + "`data.color`" + ` of another), and a CRD
with a conversion webhook. Each edit has an object of its own.

Each edit is first made the way its writer makes it, and Steward's answer
is recorded. If Steward refuses it, the edit is made again by a member of
` + "`steward:break-glass`" + `, so that it lands. Then kustomize-controller is
asked to reconcile, and the field is read again. Flux's outcome is
**kept** (the edit is still there), **reverted** (Git's value is back) or
**stripped** (the field is gone). The whole table runs twice, on fresh
objects: with Steward's default configuration, and with fluxguard's
` + "`undeclaredFields: mirror`" + `.

**How to read it.** Steward agrees with Flux when it allows what Flux
keeps and refuses what Flux reverts or strips. Its denial says which:
"reverted" for a field Git declares, "removes what that manager writes"
for a field written by a field manager kustomize-controller strips. By
default Steward also refuses a person's change of a field Git does not
declare, even though Flux keeps it. That denial says "which Git does not
declare", never "reverted", and the last column shows it as "refuses
what Flux keeps". With ` + "`mirror`" + `, Steward allows those changes, as
Flux keeps them. The rules are in [security.md](security.md).

`)
	return b.String()
}

// The outage test's Kustomization, GitRepository and namespace.
const (
	downName = "realflux-down"
	downNS   = "realflux-down"
)

// downManifests are the outage test's Git repository: a Deployment that
// declares its image and no replicas, a ConfigMap whose data.color is
// color, a CRD with a conversion webhook, and, when source is set, a
// GitRepository of that name.
func downManifests(repoURL, color, source string) map[string]string {
	files := map[string]string{
		"deploy/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ` + downNS + `}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "` + diffImage + `"}]}
`,
		"deploy/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: ` + downNS + `}
data: {color: ` + color + `}
`,
		"deploy/crd.yaml": diffCRD.manifest(diffNS, downName),
	}
	if source != "" {
		files["deploy/source.yaml"] = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: ` + source + `, namespace: ` + downNS + `}
spec: {interval: 10m, url: "` + repoURL + `", ref: {branch: main}}
`
	}
	return files
}

// fluxFinalizer is the finalizer Flux's controllers put on the objects
// they reconcile, and remove before those go.
const fluxFinalizer = "finalizers.fluxcd.io"

// TestRealFluxWhileStewardIsDown stops Steward, and then makes it hang
// (SIGSTOP: connections accepted, never answered), and proves that
// meanwhile Flux and the cluster's machinery go on as without Steward:
// source-controller adds its finalizer to a new GitRepository Flux
// applied (labelled, in the Kustomization's inventory) and removes it when
// Flux prunes it; kustomize-controller applies a new commit; the HPA's
// scale and cainjector's caBundle write pass, and so does an operator's
// edit (failurePolicy Ignore of fluxguard-serviceaccounts.steward.dev);
// only a person's edit of a field Git declares fails (failurePolicy Fail
// of fluxguard.steward.dev). Steward is brought back after each outage.
func TestRealFluxWhileStewardIsDown(t *testing.T) {
	keepStewardRunning(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The GitRepository's URL is only known once the repository exists,
	// and the first commit needs none.
	rf := startRealFlux(ctx, t, downName, downNS, downManifests("", "blue", ""), nil, harness.FluxOptions{})
	wantApplied(t, rf.Applied, rf.Rev)
	personsEdit := []string{"--as", diffPerson, "-n", downNS, "patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"color":"red"}}`}
	fluxguardAnswers := func(t *testing.T) {
		t.Helper()
		harness.Eventually(t, 30*time.Second, func() error {
			_, stderr, err := env.Kubectl(ctx, "", append(personsEdit, "--dry-run=server")...)
			if err == nil || !strings.Contains(stderr, fluxguardHook) {
				return fmt.Errorf("a person's edit is not refused by fluxguard: %v %s", err, stderr)
			}
			return nil
		})
	}
	fluxguardAnswers(t)
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(diffCRD.gvk())
	crd.SetName(diffCRD.objectName(downName))
	// The two registrations of fluxguard's object webhook, by writer:
	// what the writes below prove rests on their failure policies.
	hooks := map[string]registeredWebhook{}
	for _, w := range registeredWebhooks(t, ctx) {
		hooks[w.name] = w
	}
	people, serviceAccounts := hooks["fluxguard.steward.dev"], hooks["fluxguard-serviceaccounts.steward.dev"]
	if people.failurePolicy != admissionregistrationv1.Fail || serviceAccounts.failurePolicy != admissionregistrationv1.Ignore {
		t.Fatalf("fluxguard.steward.dev has failurePolicy %q and fluxguard-serviceaccounts.steward.dev %q, want Fail and Ignore", people.failurePolicy, serviceAccounts.failurePolicy)
	}
	// waited checks how long a write a webhook of hook's took while
	// Steward is down: within its timeout and a margin, never the 10 s
	// default, and, while Steward hangs, about the timeout (the API server
	// waited for Steward: the write did reach the webhook).
	waited := func(t *testing.T, what, outage string, hook registeredWebhook, elapsed time.Duration) {
		t.Helper()
		t.Logf("%s took %s while Steward is %s (%s: timeout %s)", what, elapsed.Round(time.Millisecond), outage, hook.name, hook.timeout)
		if elapsed > hook.timeout+timeoutMargin {
			t.Errorf("%s took %s, more than the timeout %s of %s and %s", what, elapsed, hook.timeout, hook.name, timeoutMargin)
		}
		if outage == "hung" && elapsed < hook.timeout*9/10 {
			t.Errorf("%s took %s while Steward hangs, less than the timeout %s of %s: it did not wait for Steward, so it tests nothing", what, elapsed, hook.timeout, hook.name)
		}
	}

	for i, outage := range []string{"stopped", "hung"} {
		t.Run(outage, func(t *testing.T) {
			bringBack := takeDown(t, ctx, outage)
			// Back whatever happens below: the next outage, and the
			// tests after this one, need it.
			defer func() {
				bringBack()
				fluxguardAnswers(t)
			}()

			source := outage + "-source"
			rev, err := rf.Repo.Commit(ctx, "a GitRepository, color "+outage, downManifests(rf.Repo.URL, outage, source))
			if err != nil {
				t.Fatal(err)
			}
			t.Run("KustomizeControllerAppliesACommit", func(t *testing.T) {
				wantApplied(t, reconcileSourceAndKustomization(ctx, t, rf.Flux, rf.Source, rf.Kustomization), rev)
				got, _ := readField(ctx, t, diffConfigMap.gvk(), client.ObjectKey{Namespace: downNS, Name: "settings"}, "data", "color")
				if got != outage {
					t.Errorf("the ConfigMap's color is %q, want Git's %q", got, outage)
				}
			})

			repo := &unstructured.Unstructured{}
			repo.SetGroupVersionKind(schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"})
			repo.SetNamespace(downNS)
			repo.SetName(source)
			t.Run("SourceControllerAddsItsFinalizer", func(t *testing.T) {
				harness.Eventually(t, 30*time.Second, func() error {
					if err := env.Client.Get(ctx, client.ObjectKeyFromObject(repo), repo); err != nil {
						return err
					}
					if !slices.Contains(repo.GetFinalizers(), fluxFinalizer) {
						return fmt.Errorf("GitRepository %s has finalizers %v, not %s", source, repo.GetFinalizers(), fluxFinalizer)
					}
					return nil
				})
				for k, v := range map[string]string{"kustomize.toolkit.fluxcd.io/name": downName, "kustomize.toolkit.fluxcd.io/namespace": harness.FluxNamespace} {
					if got := repo.GetLabels()[k]; got != v {
						t.Errorf("GitRepository %s: label %s is %q, want %q", source, k, got, v)
					}
				}
				if id := downNS + "_" + source + "_source.toolkit.fluxcd.io_GitRepository"; !inInventory(ctx, t, rf.Kustomization, id) {
					t.Errorf("the Kustomization's inventory does not list %s", id)
				}
			})

			t.Run("TheAutoscalersScalePasses", func(t *testing.T) {
				replicas := int32(3 + i)
				start := time.Now()
				if err := autoscale(ctx, downNS, "web", replicas, nil); err != nil {
					t.Fatalf("the HPA's scale while Steward is %s: %v", outage, err)
				}
				// Never sent to Steward: it does not wait for a hung one.
				if elapsed := time.Since(start); elapsed > unaffectedBound {
					t.Errorf("the HPA's scale took %s while Steward is %s: it waited for Steward", elapsed, outage)
				}
				if got, _ := readField(ctx, t, diffDeployment.gvk(), client.ObjectKey{Namespace: downNS, Name: "web"}, "spec", "replicas"); got != strconv.Itoa(int(replicas)) {
					t.Errorf("the Deployment's replicas are %s after the HPA's scale to %d", got, replicas)
				}
			})

			t.Run("CainjectorsCABundlePasses", func(t *testing.T) {
				ca, err := harness.NewCA("cert-manager-" + outage)
				if err != nil {
					t.Fatal(err)
				}
				bundle := base64.StdEncoding.EncodeToString(ca.PEM)
				patch := fmt.Sprintf(`{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":%q}}}}}`, bundle)
				start := time.Now()
				if err := patchAs(ctx, cainjectorUser, nil, crd.DeepCopy(), types.MergePatchType, patch, client.FieldOwner("cert-manager-cainjector")); err != nil {
					t.Fatalf("cainjector's caBundle write while Steward is %s: %v", outage, err)
				}
				waited(t, "cainjector's caBundle write", outage, serviceAccounts, time.Since(start))
				if got, _ := readField(ctx, t, crd.GroupVersionKind(), client.ObjectKeyFromObject(crd), "spec", "conversion", "webhook", "clientConfig", "caBundle"); got != bundle {
					t.Errorf("the CRD's caBundle is %q after cainjector's write of %q", got, bundle)
				}
			})

			t.Run("APersonsEditFailsAnOperatorsPasses", func(t *testing.T) {
				start := time.Now()
				_, stderr, err := env.Kubectl(ctx, "", personsEdit...)
				if err == nil || !strings.Contains(stderr, "failed calling webhook") || !strings.Contains(stderr, `"fluxguard.steward.dev"`) {
					t.Errorf("a person's edit of a field Git declares while Steward is %s: want the API server's \"failed calling webhook\" error of fluxguard.steward.dev (failurePolicy Fail), got %v", outage, err)
				}
				waited(t, "a person's edit", outage, people, time.Since(start))
				patch := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"` + downNS + `"},` +
					`"spec":{"template":{"metadata":{"annotations":{"` + reloadedAnnot + `":"` + outage + `"}}}}}`
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: downNS, Name: "web"}}
				start = time.Now()
				if err := patchAs(ctx, reloaderUser, nil, d, types.ApplyPatchType, patch, client.FieldOwner("reloader"), client.ForceOwnership); err != nil {
					t.Errorf("an operator's edit while Steward is %s: want it allowed (failurePolicy Ignore of fluxguard-serviceaccounts.steward.dev), got %v", outage, err)
				}
				waited(t, "an operator's edit", outage, serviceAccounts, time.Since(start))
			})

			t.Run("SourceControllerRemovesItsFinalizer", func(t *testing.T) {
				rev, err := rf.Repo.Commit(ctx, "no GitRepository", nil, "deploy/source.yaml")
				if err != nil {
					t.Fatal(err)
				}
				wantApplied(t, reconcileSourceAndKustomization(ctx, t, rf.Flux, rf.Source, rf.Kustomization), rev)
				// kustomize-controller deleted it; it is gone once
				// source-controller has removed its finalizer.
				harness.Eventually(t, 30*time.Second, func() error {
					err := env.Client.Get(ctx, client.ObjectKeyFromObject(repo), repo.DeepCopy())
					if apierrors.IsNotFound(err) {
						return nil
					}
					return fmt.Errorf("the pruned GitRepository %s is still there (%v)", source, err)
				})
			})
		})
	}
}

// inInventory says whether the Kustomization's status.inventory lists id.
func inInventory(ctx context.Context, t *testing.T, kustomization *unstructured.Unstructured, id string) bool {
	t.Helper()
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(kustomization.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kustomization), cur); err != nil {
		t.Fatal(err)
	}
	entries, _, _ := unstructured.NestedSlice(cur.Object, "status", "inventory", "entries")
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok && m["id"] == id {
			return true
		}
	}
	return false
}
