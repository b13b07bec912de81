package argocdguard

import (
	"strconv"
	"strings"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/object"
)

// application is what the cache keeps of an Argo CD Application: what a
// decision and its message read, and which objects its status lists,
// nothing else. keepApplication drops the rest before the store keeps it.
type application struct {
	// ObjectMeta holds only the namespace, name and resource version,
	// which the informer's store keys and tracks objects by.
	metav1.ObjectMeta
	// The texts a decision about the Application's objects says, made
	// once when it is cached rather than on every request: its name, that
	// with where its content comes from, what Argo CD does with a hand
	// edit, and how to pause it.
	what, display, revertText, hint string
	// from says where the Application's content comes from, and revision
	// which of it was synced last.
	from, revision      string
	automated, selfHeal bool
	// skipReconcile is the Application's argocd.argoproj.io/skip-reconcile.
	skipReconcile bool
	ignore        []ignoreDifference
	// resources are the objects status.resources lists; pruning those of
	// them Argo CD would prune (no longer in Git).
	resources, pruning gitops.Inventory
	// kinds are status.resources' distinct kinds, which the audit lists.
	kinds []schema.GroupVersionKind
	// project and the destination choose the service account a sync
	// runs as under impersonation.
	project, destServer, destNamespace string
}

// ignoreDifference is one of spec.ignoreDifferences, with its JSON
// pointers (jq expressions and managers are not evaluated). Its group and
// kind are globs, as Argo CD reads them ("*" is common); its name and
// namespace are matched exactly.
type ignoreDifference struct {
	group, kind     pattern
	name, namespace string
	paths           []object.Pointer
}

func (a *application) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the Application as informers expect; cached
// Applications are never changed, so the copy shares their slices.
func (a *application) DeepCopyObject() runtime.Object {
	out := *a
	return &out
}

// keepApplication is the informer's transform.
var keepApplication = gitops.Keep(Name, applicationOf)

// KeepApplication is the Applications' informer transform
// (keepApplication): it trims an Application, as the API server sends
// it, to what the cache keeps. Benchmarks outside this package use it to
// build the cache they pass to WithApplications, so they measure the rule
// on what it reads in a cluster.
func KeepApplication(obj any) (any, error) { return keepApplication(obj) }

func applicationOf(u *unstructured.Unstructured) *application {
	a := &application{}
	a.Namespace = unique.Make(u.GetNamespace()).Value()
	a.Name = u.GetName()
	a.ResourceVersion = u.GetResourceVersion()
	a.skipReconcile, _ = strconv.ParseBool(u.GetAnnotations()[annotationSkipReconcile])
	a.project, _, _ = unstructured.NestedString(u.Object, "spec", "project")
	a.destServer, _, _ = unstructured.NestedString(u.Object, "spec", "destination", "server")
	if a.destServer == "" {
		a.destServer, _, _ = unstructured.NestedString(u.Object, "spec", "destination", "name")
	}
	a.destNamespace, _, _ = unstructured.NestedString(u.Object, "spec", "destination", "namespace")
	a.from = sourceOf(u)
	a.revision = shortRevision(revisionOf(u))
	if auto, found, _ := unstructured.NestedMap(u.Object, "spec", "syncPolicy", "automated"); found {
		enabled, set, _ := unstructured.NestedBool(auto, "enabled")
		a.automated = !set || enabled
		a.selfHeal, _, _ = unstructured.NestedBool(auto, "selfHeal")
		a.selfHeal = a.selfHeal && a.automated
	}
	ignores, _, _ := unstructured.NestedSlice(u.Object, "spec", "ignoreDifferences")
	for _, item := range ignores {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		d := ignoreDifference{}
		group, _ := m["group"].(string)
		kind, _ := m["kind"].(string)
		d.name, _ = m["name"].(string)
		d.namespace, _ = m["namespace"].(string)
		d.paths = gitops.IgnorePaths(m["jsonPointers"])
		if len(d.paths) > 0 {
			d.group, d.kind = newPattern(group), newPattern(kind)
			a.ignore = append(a.ignore, d)
		}
	}
	resources, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
	var all, pruning []string
	var kinds []schema.GroupVersionKind
	for _, item := range resources {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		id := gitops.InventoryID(str("namespace"), str("name"), str("group"), str("kind"))
		all = append(all, id)
		if p, _ := m["requiresPruning"].(bool); p {
			pruning = append(pruning, id)
		}
		if str("version") != "" && str("kind") != "" {
			kinds = append(kinds, schema.GroupVersionKind{Group: str("group"), Version: str("version"), Kind: str("kind")})
		}
	}
	a.resources, a.pruning = gitops.NewInventory(all), gitops.NewInventory(pruning)
	a.kinds = gitops.DistinctKinds(kinds)
	a.what = "Argo CD Application " + a.Namespace + "/" + a.Name
	a.display = a.what + " (" + a.from
	if a.revision != "" {
		a.display += ", revision " + a.revision
	}
	a.display += ")"
	a.revertText = a.revert()
	a.hint = "to pause Argo CD, set " + annotationSkipReconcile + "=true on " + a.what
	return a
}

// revisionOf is the revision last synced: status.sync.revision, or for an
// Application with several sources that of the first, which sourceOf
// names.
func revisionOf(u *unstructured.Unstructured) string {
	if r, _, _ := unstructured.NestedString(u.Object, "status", "sync", "revision"); r != "" {
		return r
	}
	revisions, _, _ := unstructured.NestedSlice(u.Object, "status", "sync", "revisions")
	if len(revisions) > 0 {
		r, _ := revisions[0].(string)
		return r
	}
	return ""
}

// shortRevision cuts a commit hash, or an OCI digest's, to seven hex
// digits, as people read them. Other revisions are kept whole: a chart
// source's is the chart's version, which a cut would change
// ("1.24.10-rc.1" is not "1.24.10").
func shortRevision(r string) string {
	algorithm, digest, ok := strings.Cut(r, ":")
	if !ok {
		algorithm, digest = "", r
	} else {
		algorithm += ":"
	}
	if len(digest) < 40 || strings.Trim(digest, "0123456789abcdef") != "" {
		return r
	}
	return algorithm + digest[:7]
}

// sourceOf names the Application's source (the first of several).
func sourceOf(u *unstructured.Unstructured) string {
	src, found, _ := unstructured.NestedMap(u.Object, "spec", "source")
	if !found {
		if sources, _, _ := unstructured.NestedSlice(u.Object, "spec", "sources"); len(sources) > 0 {
			src, _ = sources[0].(map[string]any)
		}
	}
	repo, _ := src["repoURL"].(string)
	parts := []string{"repo " + repo}
	if path, _ := src["path"].(string); path != "" {
		parts = append(parts, "path "+path)
	}
	if chart, _ := src["chart"].(string); chart != "" {
		parts = append(parts, "chart "+chart)
	}
	if rev, _ := src["targetRevision"].(string); rev != "" {
		parts = append(parts, "target "+rev)
	}
	return strings.Join(parts, ", ")
}

// skipFor are the pointers the Application's ignoreDifferences ignore on
// the object ref names.
func (a *application) skipFor(ref gitops.Ref) []object.Pointer {
	var out []object.Pointer
	for _, d := range a.ignore {
		if d.group.match(ref.Group) && d.kind.match(ref.Kind) && (d.name == "" || d.name == ref.Name) && (d.namespace == "" || d.namespace == ref.Namespace) {
			out = append(out, d.paths...)
		}
	}
	return out
}

// revert says what Argo CD does with a hand edit.
func (a *application) revert() string {
	switch {
	case a.selfHeal:
		return "it is reverted at Argo CD's next self-heal (self-heal is on)"
	case a.automated:
		return "self-heal is off, so the change stays until the next sync from Git, and the Application shows OutOfSync meanwhile"
	}
	return "automated sync is off, so the change stays until the next sync from Git overwrites it, and the Application shows OutOfSync meanwhile"
}
