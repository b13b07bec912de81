package e2e

import (
	"context"
	"debug/buildinfo"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/bench"
	"github.com/stewardhq/steward/e2e/harness"
)

// The differential tables run the same edits against each GitOps tool's
// real controller (TestRealFluxDifferential, TestRealArgoCDDifferential):
// each edit is tried as its writer makes it, with Steward's default
// configuration and with the guard's undeclaredFields: mirror; an edit
// Steward refuses is repeated as a member of the break-glass group, so
// that the tool's outcome is known for every row; the controller is asked
// to reconcile, and what it did with the edit is recorded beside
// Steward's answer. With mirror, Steward must refuse exactly what the
// tool reverts or strips, saying which; by default too, except that it
// refuses people's changes of fields Git does not declare that the tool
// keeps, saying so. Each table is a page of docs/ (-update rewrites it).

// diffTool is a GitOps tool whose real controller a differential table
// runs against.
type diffTool struct {
	// name is the tool as the page names it ("Flux"), controller what
	// reconciles ("kustomize-controller").
	name, controller string
	// ns is the namespace of the rows' objects; guard the rule guarding
	// them and hook its webhook's denial prefix.
	ns, guard, hook string
	// page is the page the table is written to, from the repository's
	// root; intro is the page's text above the table.
	page  string
	intro func(t *testing.T) string
	// ignore names what the tool ignores a field with, in the ignored
	// row's edit.
	ignore string
	// reconcile has the controller reconcile now and waits until it has.
	reconcile func(ctx context.Context, t *testing.T)
}

// gitFiles are the Git repository of rows in d's namespace: a file of
// every row's object for each mode, and for the ignored row the entries
// ignoreEntry writes in the tool's own form (a Kustomization's
// spec.ignore, an Application's ignoreDifferences), for the object base
// and the JSON pointer of its field.
func (d *diffTool) gitFiles(rows []diffRow, ignoreEntry func(base, pointer string) map[string]any) (files map[string]string, ignore []any) {
	files = map[string]string{}
	for _, m := range diffModes {
		var docs []string
		for _, r := range rows {
			docs = append(docs, r.kind.manifest(d.ns, r.base(m)))
			if r.slug == "ignored" {
				ignore = append(ignore, ignoreEntry(r.base(m), "/"+strings.Join(r.field, "/")))
			}
		}
		files["deploy/"+m+".yaml"] = strings.Join(docs, "---\n")
	}
	return files, ignore
}

// config is Steward's configuration in mode.
func (d *diffTool) config(mode string) string {
	if mode == "mirror" {
		return harness.DefaultConfig + "rules:\n  " + d.guard + ":\n    undeclaredFields: mirror\n"
	}
	return harness.DefaultConfig
}

// runDifferential runs rows against d's controller in each mode, writes
// the table to d's page (or compares it), and fails for each row where
// Steward's answer is neither the tool's nor the mode's.
func runDifferential(ctx context.Context, t *testing.T, d *diffTool, rows []diffRow) {
	restoreDefaultSteward(t)
	results := map[string][]diffResult{}
	for _, mode := range diffModes {
		ok := t.Run(mode, func(t *testing.T) {
			if mode != "default" {
				if _, err := env.RestartSteward(ctx, d.config(mode)); err != nil {
					t.Fatalf("starting steward with %s: %v", mode, err)
				}
			}
			// Probed on a ConfigMap whose field Git declares.
			for _, r := range rows {
				if r.kind == diffConfigMap && r.git != "" {
					d.waitGuardKnows(ctx, t, r.base(mode))
					break
				}
			}
			// Every row edits its own object, so one reconcile after all
			// the edits answers for each of them, as one after each would.
			edits := make([]rowEdit, len(rows))
			for i, r := range rows {
				edits[i] = d.editRow(ctx, t, r, mode)
			}
			d.reconcile(ctx, t)
			for i, r := range rows {
				res := d.outcome(ctx, t, r, edits[i])
				t.Logf("%s: Steward %s; %s %s%s", r.edit, res.answer, d.controller, res.outcome, quoteDenial(res.denial))
				results[mode] = append(results[mode], res)
			}
		})
		if !ok {
			t.FailNow()
		}
	}

	page := d.table(t, rows, results)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bench.GoldenFile(t, filepath.Join(root, filepath.FromSlash(d.page)), page, *update)

	for i, r := range rows {
		def, mir := results["default"][i], results["mirror"][i]
		if def.outcome != mir.outcome {
			t.Errorf("row %d (%s): %s %s the edit in the default run and %s it in the mirror run", i+1, r.edit, d.controller, def.outcome, mir.outcome)
		}
		for _, mode := range diffModes {
			res := results[mode][i]
			if strings.Contains(res.denial, "reverted") && res.outcome != outcomeReverted {
				t.Errorf("row %d (%s), %s: Steward's denial says reverted, but %s %s the edit: %s", i+1, r.edit, mode, d.controller, res.outcome, res.denial)
			}
			if d.agreement(r, mode, res) == "" && r.divergence == "" {
				t.Errorf("row %d (%s), %s: %s %s the edit, and Steward answered %s%s; want %s", i+1, r.edit, mode, d.controller, res.outcome, res.answer, quoteDenial(res.denial), expected(r, mode, res))
			}
		}
	}
}

// waitGuardKnows waits until the guard refuses a person's change of a
// field Git declares on the ConfigMap name: Steward's cache has the
// owner's record.
func (d *diffTool) waitGuardKnows(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() error {
		_, stderr, err := env.Kubectl(ctx, "", "--as", diffPerson, "-n", d.ns, "patch", "configmap", name, "--type=merge", "-p", `{"data":{"color":"probe"}}`, "--dry-run=server")
		if err == nil || !strings.Contains(stderr, d.hook) {
			return fmt.Errorf("a person's edit of ConfigMap %s is not refused yet: %v %s", name, err, stderr)
		}
		return nil
	})
}

// rowEdit is a row's edit made, before its controller reconciles: the
// object edited, its field before the edit, and Steward's answer.
type rowEdit struct {
	name           string
	before         string
	hadBefore      bool
	answer, denial string
}

// editRow makes a row's edit in a mode, as the row's writer and, when
// Steward refuses it, again as a member of the break-glass group, so that
// the edit is in place for the controller's reconcile.
func (d *diffTool) editRow(ctx context.Context, t *testing.T, r diffRow, mode string) rowEdit {
	t.Helper()
	e := rowEdit{name: r.kind.objectName(r.base(mode))}
	e.before, e.hadBefore = d.readField(ctx, t, r, e.name)
	err := r.write(ctx, d.ns, e.name, nil)
	switch {
	case err == nil:
		e.answer = answerAllowed
	case strings.Contains(err.Error(), "denied the request"):
		e.answer, e.denial = classifyDenial(err.Error()), denialText(err.Error())
		if err := r.write(ctx, d.ns, e.name, []string{breakGlass}); err != nil {
			t.Fatalf("%s, repeated as a member of %s: %v", r.edit, breakGlass, err)
		}
	default:
		t.Fatalf("%s: %v", r.edit, err)
	}
	if got, _ := d.readField(ctx, t, r, e.name); got != r.value {
		t.Fatalf("%s: after the edit %s is %q, want %q", r.edit, strings.Join(r.field, "."), got, r.value)
	}
	return e
}

// outcome reads what the controller's reconcile left of a row's edit e.
func (d *diffTool) outcome(ctx context.Context, t *testing.T, r diffRow, e rowEdit) diffResult {
	t.Helper()
	res := diffResult{answer: e.answer, denial: e.denial}
	after, has := d.readField(ctx, t, r, e.name)
	switch {
	case has && after == r.value:
		res.outcome = outcomeKept
	case r.git != "" && after == r.git:
		res.outcome = outcomeReverted
	case r.git == "" && (!has || e.hadBefore && after == e.before):
		res.outcome = outcomeStripped
	default:
		t.Fatalf("%s: after %s's reconcile %s is %q (present: %v); Git's value is %q, the edit wrote %q, it was %q", r.edit, d.controller, strings.Join(r.field, "."), after, has, r.git, r.value, e.before)
	}
	return res
}

// readField reads a row's field of the object name, and whether it is
// set.
func (d *diffTool) readField(ctx context.Context, t *testing.T, r diffRow, name string) (string, bool) {
	t.Helper()
	key := client.ObjectKey{Name: name}
	if r.kind != diffCRD {
		key.Namespace = d.ns
	}
	return readField(ctx, t, r.kind.gvk(), key, r.field...)
}

// The service accounts of the table's machinery, as the API server names
// them.
const (
	hpaUser        = "system:serviceaccount:kube-system:horizontal-pod-autoscaler"
	cainjectorUser = "system:serviceaccount:cert-manager:cert-manager-cainjector"
	reloaderUser   = "system:serviceaccount:reloader:reloader"
	reloadedAnnot  = "reloader.stakater.com/last-reloaded-from"
)

// diffModes are the two configurations the table is run with: the
// default, and the guard's undeclaredFields: mirror (diffTool.config).
// Each has its own copy of every row's object in Git, its name prefixed
// with the mode, so that the second run starts from what Git declares.
var diffModes = []string{"default", "mirror"}

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

// manifest is the object as Git declares it, in namespace ns.
func (k diffKind) manifest(ns, base string) string {
	name := k.objectName(base)
	switch k {
	case diffDeployment, diffReplicated:
		replicas := ""
		if k == diffReplicated {
			replicas = "  replicas: 2\n"
		}
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `, namespace: ` + ns + `}
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
      clientConfig: {service: {name: widget-webhook, namespace: ` + ns + `, path: /convert}}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`
	}
	annotations := ""
	if k == diffMerged {
		annotations = `, annotations: {"kustomize.toolkit.fluxcd.io/ssa": Merge}`
	}
	return `apiVersion: v1
kind: ConfigMap
metadata: {name: ` + name + `, namespace: ` + ns + annotations + `}
data: {color: blue}
`
}

// diffWrite makes a row's edit of the object name (in namespace ns unless
// it is cluster-scoped), as the row's writer, in the writer's groups and
// extraGroups (the break-glass group, when the edit is repeated).
type diffWrite func(ctx context.Context, ns, name string, extraGroups []string) error

// diffRow is one edit of the table: a write by someone other than the
// GitOps tool to an object its controller applied, of one field.
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
	// the tool does, by Steward's design (docs/security.md); {controller}
	// in it names the tool's controller.
	divergence string
}

// base is the row's object's name (a CRD's group) in a mode.
func (r diffRow) base(mode string) string { return mode + "-" + r.slug }

// diffResult is what became of a row's edit in one mode.
type diffResult struct {
	// answer is Steward's answer to the first try, and denial its text
	// when it refused.
	answer, denial string
	// outcome is what the controller's next reconcile did.
	outcome string
}

// Steward's answers, as the table names them: a denial is known by the
// words that say what the tool does with the change.
const (
	answerAllowed    = "allowed"
	answerReverted   = `refused: "reverted"`
	answerUndeclared = `refused: "which Git does not declare"`
	answerStripped   = `refused: "removes what that manager writes"`
)

// What the controller's reconcile did with an edit.
const (
	outcomeKept     = "kept"
	outcomeReverted = "reverted"
	outcomeStripped = "stripped"
)

// answerFor is the answer Steward gives when it answers as the tool does.
var answerFor = map[string]string{outcomeKept: answerAllowed, outcomeReverted: answerReverted, outcomeStripped: answerStripped}

// rows are the table's edits of d's objects: each row's object has the
// kind Git declares for it; the ssa: Merge row is Flux's alone.
func (d *diffTool) rows(t *testing.T) []diffRow {
	out := slices.DeleteFunc(diffRows(t), func(r diffRow) bool { return r.kind == diffMerged && d.name != "Flux" })
	for i := range out {
		out[i].edit = strings.ReplaceAll(out[i].edit, "{ignore}", d.ignore)
		out[i].divergence = strings.ReplaceAll(out[i].divergence, "{controller}", d.controller)
	}
	return out
}

// diffRows are every tool's edits.
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
			divergence: "by design, the autoscalers' `/scale` requests never reach Steward (the scale webhook's matchConditions leave them out, see [security.md](security.md)), so that autoscaling never waits for Steward; where Git declares the replicas too, the HPA and {controller} undo each other's writes",
		},
		{
			edit: "cert-manager's cainjector writes the CRD's `spec.conversion.webhook.clientConfig.caBundle`", writer: "`" + cainjectorUser + "`, manager `cert-manager-cainjector`",
			kind: diffCRD, slug: "cainjector", field: []string{"spec", "conversion", "webhook", "clientConfig", "caBundle"}, value: caBundle,
			write: func(ctx context.Context, _, name string, extra []string) error {
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
			write: func(ctx context.Context, ns, name string, extra []string) error {
				patch := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"` + name + `","namespace":"` + ns + `"},` +
					`"spec":{"template":{"metadata":{"annotations":{"` + reloadedAnnot + `":"settings"}}}}}`
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
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
			edit: "`kubectl patch` of a ConfigMap data key Git declares and {ignore}", writer: "a person, manager `kubectl-patch`",
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
	return func(ctx context.Context, ns, name string, extra []string) error {
		return autoscale(ctx, ns, name, replicas, extra)
	}
}

// autoscale writes the replicas of Deployment namespace/name through
// /scale as the HorizontalPodAutoscaler does, as its service account (in
// extra groups too): scaleAs.
func autoscale(ctx context.Context, namespace, name string, replicas int32, extra []string) error {
	c, err := env.As(hpaUser, serviceAccountGroups(hpaUser, extra)...)
	if err != nil {
		return err
	}
	return scaleAs(ctx, c, namespace, name, replicas)
}

// scaleAs writes the replicas of Deployment namespace/name through /scale
// with c as the HorizontalPodAutoscaler does: an update under
// kube-controller-manager's field manager of the Scale it read, read and
// written again on a conflict (the deployment controller writes the
// Deployment's status meanwhile; the autoscaler retries at its next sync).
func scaleAs(ctx context.Context, c client.Client, namespace, name string, replicas int32) error {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale := &autoscalingv1.Scale{}
		if err := c.SubResource("scale").Get(ctx, d, scale); err != nil {
			return err
		}
		scale.Spec.Replicas = replicas
		return c.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("kube-controller-manager"))
	})
}

// kubectlAsPerson runs kubectl in the row's namespace as diffPerson with
// args, {name} in them replaced by the object's name.
func kubectlAsPerson(args ...string) diffWrite {
	return func(ctx context.Context, ns, name string, extra []string) error {
		a := []string{"--as", diffPerson, "-n", ns}
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

// classifyDenial names a denial by what it says the tool does with the
// change.
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
// with the tool's outcome: "yes" when it answered as the tool does, the
// reason when it answered as the mode says it must otherwise, "" when
// neither.
func (d *diffTool) agreement(r diffRow, mode string, res diffResult) string {
	switch {
	case res.answer == answerFor[res.outcome]:
		return "yes"
	case res.answer == expected(r, mode, res):
		return "refuses what " + d.name + " keeps"
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

// table renders the page: the table of the two runs below d's intro.
func (d *diffTool) table(t *testing.T, rows []diffRow, results map[string][]diffResult) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(d.intro(t))
	fmt.Fprintf(&b, "| # | edit | writer | %s | Steward, default | Steward, mirror | agrees (default, mirror) |\n|---|---|---|---|---|---|---|\n", d.name)
	agree := map[string]int{}
	refusedKept := 0
	var differ []string
	for i, r := range rows {
		def, mir := results["default"][i], results["mirror"][i]
		cells := make([]string, 0, 2)
		var differsIn []string
		for _, m := range diffModes {
			a := d.agreement(r, m, results[m][i])
			switch a {
			case "yes":
				agree[m]++
			case "refuses what " + d.name + " keeps":
				refusedKept++
			default:
				a = "no"
				differsIn = append(differsIn, m)
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
			differ = append(differ, fmt.Sprintf("- Row %d: %s %s the edit; Steward answered %s. Reason: %s.", i+1, d.name, def.outcome, strings.Join(answers, " and "), why))
		}
	}
	fmt.Fprintf(&b, "\n**Counts.** %d rows. By default Steward agrees with %s in %d; in %d more it refuses a person's change of a field Git does not declare, which %s keeps, as the default says it must. With `mirror` Steward agrees with %s in %d.\n",
		len(rows), d.name, agree["default"], refusedKept, d.name, d.name, agree["mirror"])
	if len(differ) > 0 {
		b.WriteString("\n**Where they differ.**\n\n" + strings.Join(differ, "\n") + "\n")
	}
	return b.String()
}

// serverVersion is the API server's version, as the pages name it.
func serverVersion(t *testing.T) string {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	return v.GitVersion
}
