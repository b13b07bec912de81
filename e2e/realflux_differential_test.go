package e2e

import (
	"context"
	"debug/buildinfo"
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
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/bench"
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

// mirrorConfig answers people's changes of fields Git does not declare as
// Flux does.
const mirrorConfig = harness.DefaultConfig + `rules:
  fluxguard:
    undeclaredFields: mirror
`

// The service accounts of the table's machinery, as the API server names
// them.
const (
	hpaUser        = "system:serviceaccount:kube-system:horizontal-pod-autoscaler"
	cainjectorUser = "system:serviceaccount:cert-manager:cert-manager-cainjector"
	reloaderUser   = "system:serviceaccount:reloader:reloader"
	reloadedAnnot  = "reloader.stakater.com/last-reloaded-from"
)

// diffModes are the two configurations the table is run with: the
// default, and fluxguard's undeclaredFields: mirror. Each has its own copy
// of every row's object in Git, its name prefixed with the mode, so that
// the second run starts from what Git declares.
var diffModes = []struct{ name, config string }{
	{"default", harness.DefaultConfig},
	{"mirror", mirrorConfig},
}

// diffKind is the kind of object a row edits, as Git declares it.
type diffKind int

const (
	// diffDeployment declares the image and no replicas.
	diffDeployment diffKind = iota
	// diffReplicated is a Deployment that declares replicas: 2 too.
	diffReplicated
	// diffConfigMap declares data.color: blue.
	diffConfigMap
	// diffMerged is that ConfigMap annotated kustomize.toolkit.fluxcd.io/ssa: Merge.
	diffMerged
	// diffCRD is a CRD of one version with a conversion webhook whose
	// clientConfig names a service (and no caBundle, which cainjector
	// writes).
	diffCRD
)

// gvk is the kind's API kind.
func (k diffKind) gvk() schema.GroupVersionKind {
	switch k {
	case diffDeployment, diffReplicated:
		return appsv1.SchemeGroupVersion.WithKind("Deployment")
	case diffCRD:
		return schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	}
	return schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
}

// objectName is the name of the object of kind called base: a CRD's name
// is its plural and group.
func (k diffKind) objectName(base string) string {
	if k == diffCRD {
		return "widgets." + base + ".example.com"
	}
	return base
}

// manifest is the object as Git declares it.
func (k diffKind) manifest(base string) string {
	name := k.objectName(base)
	switch k {
	case diffDeployment, diffReplicated:
		replicas := ""
		if k == diffReplicated {
			replicas = "  replicas: 2\n"
		}
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `, namespace: ` + diffNS + `}
spec:
` + replicas + `  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec: {containers: [{name: web, image: "` + diffImage + `"}]}
`
	case diffCRD:
		return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ` + name + `}
spec:
  group: ` + base + `.example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {service: {name: widget-webhook, namespace: ` + diffNS + `, path: /convert}}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`
	}
	annotations := ""
	if k == diffMerged {
		annotations = `, annotations: {"kustomize.toolkit.fluxcd.io/ssa": Merge}`
	}
	return `apiVersion: v1
kind: ConfigMap
metadata: {name: ` + name + `, namespace: ` + diffNS + annotations + `}
data: {color: blue}
`
}

// diffWrite makes a row's edit of the object name (in diffNS unless it is
// cluster-scoped), as the row's writer, in the writer's groups and
// extraGroups (the break-glass group, when the edit is repeated).
type diffWrite func(ctx context.Context, name string, extraGroups []string) error

// diffRow is one edit of the table: a write by someone other than Flux
// to an object kustomize-controller applied, of one field.
type diffRow struct {
	// edit and writer say what the edit is and who makes it, as the
	// page's table does.
	edit, writer string
	// kind is the kind of the row's object, and slug its name after the
	// mode's prefix.
	kind diffKind
	slug string
	// field is the path of the field the edit writes value to; git is
	// the field's value in Git, "" when Git does not declare it.
	field      []string
	git, value string
	// person is set when a person makes the edit, not a service account.
	person bool
	write  diffWrite
	// divergence, when set, says why Steward's answer differs from what
	// Flux does, by Steward's design (docs/security.md).
	divergence string
}

// base is the row's object's name (a CRD's group) in a mode.
func (r diffRow) base(mode string) string { return mode + "-" + r.slug }

// diffResult is what became of a row's edit in one mode.
type diffResult struct {
	// answer is Steward's answer to the first try, and denial its text
	// when it refused.
	answer, denial string
	// outcome is what kustomize-controller's next reconcile did.
	outcome string
}

// Steward's answers, as the table names them: a denial is known by the
// words that say what Flux does with the change.
const (
	answerAllowed    = "allowed"
	answerReverted   = `refused: "reverted"`
	answerUndeclared = `refused: "which Git does not declare"`
	answerStripped   = `refused: "removes what that manager writes"`
)

// What kustomize-controller's reconcile did with an edit.
const (
	outcomeKept     = "kept"
	outcomeReverted = "reverted"
	outcomeStripped = "stripped"
)

// answerFor is the answer Steward gives when it answers as Flux does.
var answerFor = map[string]string{outcomeKept: answerAllowed, outcomeReverted: answerReverted, outcomeStripped: answerStripped}

// diffRows are the table's edits.
func diffRows(t *testing.T) []diffRow {
	ca, err := harness.NewCA("cert-manager")
	if err != nil {
		t.Fatal(err)
	}
	caBundle := base64.StdEncoding.EncodeToString(ca.PEM)
	replicas := []string{"spec", "replicas"}
	color := []string{"data", "color"}
	team := []string{"metadata", "annotations", "team"}
	return []diffRow{
		{
			edit: "the HPA's `/scale` of the Deployment whose replicas Git does not declare", writer: "`" + hpaUser + "` (group `system:serviceaccounts`), manager `kube-controller-manager`",
			kind: diffDeployment, slug: "hpa", field: replicas, value: "3", write: autoscaleTo(3),
		},
		{
			edit: "the HPA's `/scale` of the Deployment whose replicas Git declares", writer: "`" + hpaUser + "` (group `system:serviceaccounts`), manager `kube-controller-manager`",
			kind: diffReplicated, slug: "hpa-declared", field: replicas, git: "2", value: "6", write: autoscaleTo(6),
			divergence: "by design, the autoscalers' `/scale` requests never reach Steward (the scale webhook's matchConditions leave them out, see [security.md](security.md)), so that autoscaling never waits for Steward; where Git declares the replicas too, the HPA and kustomize-controller undo each other's writes",
		},
		{
			edit: "cert-manager's cainjector writes the CRD's `spec.conversion.webhook.clientConfig.caBundle`", writer: "`" + cainjectorUser + "`, manager `cert-manager-cainjector`",
			kind: diffCRD, slug: "cainjector", field: []string{"spec", "conversion", "webhook", "clientConfig", "caBundle"}, value: caBundle,
			write: func(ctx context.Context, name string, extra []string) error {
				crd := &unstructured.Unstructured{}
				crd.SetGroupVersionKind(diffCRD.gvk())
				crd.SetName(name)
				patch := fmt.Sprintf(`{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":%q}}}}}`, caBundle)
				return patchAs(ctx, cainjectorUser, extra, crd, types.MergePatchType, patch, client.FieldOwner("cert-manager-cainjector"))
			},
		},
		{
			edit: "an operator's server-side apply of a pod-template annotation", writer: "`" + reloaderUser + "`, server-side apply as manager `reloader`",
			kind: diffDeployment, slug: "reloader", field: []string{"spec", "template", "metadata", "annotations", reloadedAnnot}, value: "settings",
			write: func(ctx context.Context, name string, extra []string) error {
				patch := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"` + name + `","namespace":"` + diffNS + `"},` +
					`"spec":{"template":{"metadata":{"annotations":{"` + reloadedAnnot + `":"settings"}}}}}`
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: diffNS, Name: name}}
				return patchAs(ctx, reloaderUser, extra, d, types.ApplyPatchType, patch, client.FieldOwner("reloader"), client.ForceOwnership)
			},
		},
		{
			edit: "`kubectl annotate` of a new annotation on the ConfigMap", writer: "a person, manager `kubectl-annotate`",
			kind: diffConfigMap, slug: "annotate", field: team, value: "payments", person: true,
			write: kubectlAsPerson("annotate", "configmap", "{name}", "team=payments"),
		},
		{
			edit: "`kubectl annotate --field-manager=k9s` of a new annotation on the ConfigMap", writer: "a person, manager `k9s`",
			kind: diffConfigMap, slug: "annotate-k9s", field: team, value: "payments", person: true,
			write: kubectlAsPerson("annotate", "configmap", "{name}", "team=payments", "--field-manager=k9s"),
		},
		{
			edit: "`kubectl scale` of the Deployment whose replicas Git does not declare", writer: "a person, through `/scale`, manager `kubectl`",
			kind: diffDeployment, slug: "scale", field: replicas, value: "5", person: true,
			write: kubectlAsPerson("scale", "deployment", "{name}", "--replicas=5"),
		},
		{
			edit: "`kubectl set image` of the Deployment's container", writer: "a person, manager `kubectl-set`",
			kind: diffDeployment, slug: "set-image", field: []string{"spec", "template", "spec", "containers", "0", "image"}, git: diffImage, value: "ghcr.io/example/web:hotfix", person: true,
			write: kubectlAsPerson("set", "image", "deployment/{name}", "web=ghcr.io/example/web:hotfix"),
		},
		{
			edit: "`kubectl patch` of a ConfigMap data key Git declares", writer: "a person, manager `kubectl-patch`",
			kind: diffConfigMap, slug: "patch", field: color, git: "blue", value: "red", person: true,
			write: kubectlAsPerson("patch", "configmap", "{name}", "--type=merge", "-p", `{"data":{"color":"red"}}`),
		},
		{
			edit: "`kubectl patch` of a ConfigMap data key Git declares and the Kustomization's `spec.ignore` lists", writer: "a person, manager `kubectl-patch`",
			kind: diffConfigMap, slug: "ignored", field: color, git: "blue", value: "red", person: true,
			write: kubectlAsPerson("patch", "configmap", "{name}", "--type=merge", "-p", `{"data":{"color":"red"}}`),
		},
		{
			edit: "`kubectl patch` adding a data key Git does not declare to a ConfigMap that Git annotates `kustomize.toolkit.fluxcd.io/ssa: Merge`", writer: "a person, manager `kubectl-patch`",
			kind: diffMerged, slug: "merged", field: []string{"data", "size"}, value: "large", person: true,
			write: kubectlAsPerson("patch", "configmap", "{name}", "--type=merge", "-p", `{"data":{"size":"large"}}`),
		},
	}
}

// serviceAccountGroups are the groups the API server puts a service
// account in, then extra.
func serviceAccountGroups(user string, extra []string) []string {
	ns := strings.Split(strings.TrimPrefix(user, "system:serviceaccount:"), ":")[0]
	return append([]string{"system:serviceaccounts", "system:serviceaccounts:" + ns}, extra...)
}

// patchAs patches obj as the service account user.
func patchAs(ctx context.Context, user string, extra []string, obj client.Object, pt types.PatchType, patch string, opts ...client.PatchOption) error {
	c, err := env.As(user, serviceAccountGroups(user, extra)...)
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(pt, []byte(patch)), opts...)
}

// autoscaleTo writes replicas through /scale as the HorizontalPodAutoscaler
// does.
func autoscaleTo(replicas int32) diffWrite {
	return func(ctx context.Context, name string, extra []string) error {
		return autoscale(ctx, diffNS, name, replicas, extra)
	}
}

// autoscale writes the replicas of Deployment namespace/name through
// /scale as the HorizontalPodAutoscaler does: an update under
// kube-controller-manager's field manager, as its service account (in
// extra groups too).
func autoscale(ctx context.Context, namespace, name string, replicas int32, extra []string) error {
	c, err := env.As(hpaUser, serviceAccountGroups(hpaUser, extra)...)
	if err != nil {
		return err
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	scale := &autoscalingv1.Scale{}
	if err := c.SubResource("scale").Get(ctx, d, scale); err != nil {
		return err
	}
	scale.Spec.Replicas = replicas
	return c.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("kube-controller-manager"))
}

// kubectlAsPerson runs kubectl in diffNS as diffPerson with args, {name}
// in them replaced by the object's name.
func kubectlAsPerson(args ...string) diffWrite {
	return func(ctx context.Context, name string, extra []string) error {
		a := []string{"--as", diffPerson, "-n", diffNS}
		for _, g := range extra {
			a = append(a, "--as-group", g)
		}
		for _, arg := range args {
			a = append(a, strings.ReplaceAll(arg, "{name}", name))
		}
		_, _, err := env.Kubectl(ctx, "", a...)
		return err
	}
}

// TestRealFluxDifferential makes each edit of diffRows to what the real
// kustomize-controller applied from Git, once with Steward's default
// configuration and once with fluxguard's undeclaredFields: mirror, and
// compares Steward's answer with what kustomize-controller's next
// reconcile does with the edit. Each edit is tried as its writer would
// make it; an edit Steward refuses is repeated as a member of the break-glass
// group, so that Flux's outcome is known for every row. With mirror,
// Steward must refuse exactly what Flux reverts or strips, saying which;
// by default too, except that it refuses people's changes of fields Git
// does not declare that Flux keeps, saying so. The table of the two runs
// is docs/flux-differential.md (-update rewrites it).
func TestRealFluxDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rows := diffRows(t)
	files := map[string]string{}
	var ignore []any
	for _, m := range diffModes {
		var docs []string
		for _, r := range rows {
			docs = append(docs, r.kind.manifest(r.base(m.name)))
			if r.slug == "ignored" {
				ignore = append(ignore, map[string]any{
					"paths":  []any{"/" + strings.Join(r.field, "/")},
					"target": map[string]any{"kind": "ConfigMap", "name": r.base(m.name)},
				})
			}
		}
		files["deploy/"+m.name+".yaml"] = strings.Join(docs, "---\n")
	}
	rf := startRealFlux(ctx, t, diffName, diffNS, files, map[string]any{"ignore": ignore})
	wantApplied(t, rf.Applied, rf.Rev)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := env.RestartSteward(ctx, harness.DefaultConfig); err != nil {
			t.Errorf("restoring the default configuration: %v", err)
		}
	})

	results := map[string][]diffResult{}
	for _, m := range diffModes {
		ok := t.Run(m.name, func(t *testing.T) {
			if m.config != harness.DefaultConfig {
				if _, err := env.RestartSteward(ctx, m.config); err != nil {
					t.Fatalf("starting steward with %s: %v", m.name, err)
				}
			}
			// Probed on a ConfigMap whose field Git declares.
			for _, r := range rows {
				if r.kind == diffConfigMap && r.git != "" {
					waitFluxguardKnows(ctx, t, r.base(m.name))
					break
				}
			}
			for _, r := range rows {
				res := runDiffRow(ctx, t, rf, r, m.name)
				t.Logf("%s: Steward %s; kustomize-controller %s%s", r.edit, res.answer, res.outcome, quoteDenial(res.denial))
				results[m.name] = append(results[m.name], res)
			}
		})
		if !ok {
			t.FailNow()
		}
	}

	page := diffPage(t, rows, results)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bench.GoldenFile(t, filepath.Join(root, filepath.FromSlash(differentialPage)), page, *update)

	t.Run("TheAuditReportsTheAutoscalersFight", func(t *testing.T) {
		auditAutoscalerFights(ctx, t, rows)
	})

	for i, r := range rows {
		def, mir := results["default"][i], results["mirror"][i]
		if def.outcome != mir.outcome {
			t.Errorf("row %d (%s): kustomize-controller %s the edit in the default run and %s it in the mirror run", i+1, r.edit, def.outcome, mir.outcome)
		}
		for _, m := range diffModes {
			res := results[m.name][i]
			if strings.Contains(res.denial, "reverted") && res.outcome != outcomeReverted {
				t.Errorf("row %d (%s), %s: Steward's denial says reverted, but kustomize-controller %s the edit: %s", i+1, r.edit, m.name, res.outcome, res.denial)
			}
			if agreement(r, m.name, res) == "" && r.divergence == "" {
				t.Errorf("row %d (%s), %s: kustomize-controller %s the edit, and Steward answered %s%s; want %s", i+1, r.edit, m.name, res.outcome, res.answer, quoteDenial(res.denial), expected(r, m.name, res))
			}
		}
	}
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

// waitFluxguardKnows waits until fluxguard refuses a person's change of
// a field Git declares on the ConfigMap name: Steward's cache has the
// Kustomization's inventory.
func waitFluxguardKnows(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() error {
		_, stderr, err := env.Kubectl(ctx, "", "--as", diffPerson, "-n", diffNS, "patch", "configmap", name, "--type=merge", "-p", `{"data":{"color":"probe"}}`, "--dry-run=server")
		if err == nil || !strings.Contains(stderr, fluxguardHook) {
			return fmt.Errorf("a person's edit of ConfigMap %s is not refused yet: %v %s", name, err, stderr)
		}
		return nil
	})
}

// runDiffRow makes a row's edit in a mode, as the row's writer and, when
// Steward refuses it, again as a member of the break-glass group; then
// has kustomize-controller reconcile, and reads what that left of it.
func runDiffRow(ctx context.Context, t *testing.T, rf *realFlux, r diffRow, mode string) diffResult {
	t.Helper()
	name := r.kind.objectName(r.base(mode))
	before, hadBefore := readDiffField(ctx, t, r, name)
	var res diffResult
	err := r.write(ctx, name, nil)
	switch {
	case err == nil:
		res.answer = answerAllowed
	case strings.Contains(err.Error(), "denied the request"):
		res.answer, res.denial = classifyDenial(err.Error()), denialText(err.Error())
		if err := r.write(ctx, name, []string{breakGlass}); err != nil {
			t.Fatalf("%s, repeated as a member of %s: %v", r.edit, breakGlass, err)
		}
	default:
		t.Fatalf("%s: %v", r.edit, err)
	}
	if got, _ := readDiffField(ctx, t, r, name); got != r.value {
		t.Fatalf("%s: after the edit %s is %q, want %q", r.edit, strings.Join(r.field, "."), got, r.value)
	}
	applied, err := rf.Flux.ForceReconcile(ctx, rf.Kustomization)
	if err != nil {
		t.Fatal(err)
	}
	if ready := harness.FluxReady(applied); !strings.HasPrefix(ready, "Ready=True ") {
		t.Fatalf("after %s, kustomize-controller's reconcile failed: %s", r.edit, ready)
	}
	after, has := readDiffField(ctx, t, r, name)
	switch {
	case has && after == r.value:
		res.outcome = outcomeKept
	case r.git != "" && after == r.git:
		res.outcome = outcomeReverted
	case r.git == "" && (!has || hadBefore && after == before):
		res.outcome = outcomeStripped
	default:
		t.Fatalf("%s: after kustomize-controller's reconcile %s is %q (present: %v); Git's value is %q, the edit wrote %q, it was %q", r.edit, strings.Join(r.field, "."), after, has, r.git, r.value, before)
	}
	return res
}

// readDiffField reads a row's field of the object name, and whether it is
// set.
func readDiffField(ctx context.Context, t *testing.T, r diffRow, name string) (string, bool) {
	t.Helper()
	key := client.ObjectKey{Name: name}
	if r.kind != diffCRD {
		key.Namespace = diffNS
	}
	return readField(ctx, t, r.kind.gvk(), key, r.field...)
}

// readField reads the field at path (a list's items by their index) of
// the object of kind gvk at key, and whether it is set.
func readField(ctx context.Context, t *testing.T, gvk schema.GroupVersionKind, key client.ObjectKey, path ...string) (string, bool) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := env.Client.Get(ctx, key, obj); err != nil {
		t.Fatal(err)
	}
	var cur any = obj.Object
	for _, p := range path {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[p]
			if !ok {
				return "", false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return "", false
			}
			cur = c[i]
		default:
			return "", false
		}
	}
	return fmt.Sprint(cur), true
}

// classifyDenial names a denial by what it says Flux does with the change.
func classifyDenial(msg string) string {
	switch {
	case strings.Contains(msg, "removes what that manager writes"):
		return answerStripped
	case strings.Contains(msg, "which Git does not declare"):
		return answerUndeclared
	case strings.Contains(msg, "reverted"):
		return answerReverted
	}
	return "refused: " + denialText(msg)
}

// denialText is a webhook's denial without kubectl's and the API server's
// prefixes.
func denialText(msg string) string {
	if _, after, ok := strings.Cut(msg, "denied the request: "); ok {
		return strings.TrimSpace(after)
	}
	return msg
}

func quoteDenial(denial string) string {
	if denial == "" {
		return ""
	}
	return ": " + strconv.Quote(denial)
}

// expected is the answer a row's edit should have had in mode.
func expected(r diffRow, mode string, res diffResult) string {
	if mode == "default" && r.person && r.git == "" && res.outcome == outcomeKept {
		return answerUndeclared
	}
	return answerFor[res.outcome]
}

// agreement says how Steward's answer to a row's edit in mode compares
// with Flux's outcome: "yes" when it answered as Flux does, the reason
// when it answered as the mode says it must otherwise, "" when neither.
func agreement(r diffRow, mode string, res diffResult) string {
	switch {
	case res.answer == answerFor[res.outcome]:
		return "yes"
	case res.answer == expected(r, mode, res):
		return "refuses what Flux keeps"
	}
	return ""
}

// moduleVersion is the version of module path the binary at the path in
// environment variable binaryVar was built with.
func moduleVersion(t *testing.T, binaryVar, module string) string {
	t.Helper()
	info, err := buildinfo.ReadFile(os.Getenv(binaryVar))
	if err != nil {
		t.Fatalf("reading the build information of %s: %v", binaryVar, err)
	}
	if info.Main.Path == module {
		return info.Main.Version
	}
	for _, d := range info.Deps {
		if d.Path == module {
			return d.Version
		}
	}
	t.Fatalf("%s (%s) was not built from %s", binaryVar, os.Getenv(binaryVar), module)
	return ""
}

// diffPage renders the table of the two runs as docs/flux-differential.md.
func diffPage(t *testing.T, rows []diffRow, results map[string][]diffResult) string {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	server, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
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
		moduleVersion(t, "SOURCE_CONTROLLER", "github.com/fluxcd/source-controller"), harness.FluxRelease, server.GitVersion)
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
	b.WriteString(`| # | edit | writer | Flux | Steward, default | Steward, mirror | agrees (default, mirror) |
|---|---|---|---|---|---|---|
`)
	agree := map[string]int{}
	refusedKept := 0
	var differ []string
	for i, r := range rows {
		def, mir := results["default"][i], results["mirror"][i]
		cells := make([]string, 0, 2)
		var differsIn []string
		for _, m := range diffModes {
			a := agreement(r, m.name, results[m.name][i])
			switch a {
			case "yes":
				agree[m.name]++
			case "refuses what Flux keeps":
				refusedKept++
			default:
				a = "no"
				differsIn = append(differsIn, m.name)
			}
			cells = append(cells, a)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s |\n", i+1, r.edit, r.writer, def.outcome, def.answer, mir.answer, strings.Join(cells, ", "))
		if len(differsIn) > 0 {
			why := r.divergence
			if why == "" {
				why = "none; Steward's answer is wrong here"
			}
			var answers []string
			for _, m := range differsIn {
				answers = append(answers, results[m][i].answer+" ("+m+")")
			}
			differ = append(differ, fmt.Sprintf("- Row %d: Flux %s the edit; Steward answered %s. Reason: %s.", i+1, def.outcome, strings.Join(answers, " and "), why))
		}
	}
	fmt.Fprintf(&b, "\n**Counts.** %d rows. By default Steward agrees with Flux in %d; in %d more it refuses a person's change of a field Git does not declare, which Flux keeps, as the default says it must. With `mirror` Steward agrees with Flux in %d.\n",
		len(rows), agree["default"], refusedKept, agree["mirror"])
	if len(differ) > 0 {
		b.WriteString("\n**Where they differ.**\n\n" + strings.Join(differ, "\n") + "\n")
	}
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
		"deploy/crd.yaml": diffCRD.manifest(downName),
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
	rf := startRealFlux(ctx, t, downName, downNS, downManifests("", "blue", ""), nil)
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
