package fluxguard

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
)

// owner is what the cache keeps of a Kustomization or HelmRelease: what a
// decision and its message read, and the inventory, nothing else. The
// API server sends whole objects (spec and status are read); keepOwner
// drops the rest before the store keeps them.
type owner struct {
	// ObjectMeta holds only the namespace, name and resource version,
	// which the informer's store keys and tracks objects by.
	metav1.ObjectMeta
	kind string
	// uid is an ArtifactGenerator's, which the objects it generates name.
	uid string
	// from says where the owner's content comes from, and revision which
	// of it was applied last.
	from, revision string
	interval       string
	serviceAccount string
	suspended      bool
	// driftMode is a HelmRelease's spec.driftDetection.mode ("" is
	// disabled, helm-controller's default).
	driftMode string
	// release and releaseNamespace are a HelmRelease's Helm release.
	release, releaseNamespace string
	// chart is the chart source a HelmRelease's spec.chart made
	// helm-controller generate (status.helmChart): a HelmChart or, from
	// Flux 2.10, an OCIRepository; zero when none.
	chart     generatedChart
	ignore    []ignoreRule
	inventory gitops.Inventory
	// kinds are the inventory's distinct kinds, which the audit lists.
	kinds []schema.GroupVersionKind
	// hasInventory tells an empty inventory from none (HelmReleases
	// before Flux 2.8 keep none).
	hasInventory bool
	// The texts a decision about the owner's objects says, made once
	// when the owner is cached rather than on every request: its name
	// with where its content comes from, what Flux does with a hand edit,
	// its tenant service account's user name ("" for none), and how to
	// suspend it.
	display, what, revertText, writer, suspendHint string
}

// GetObjectKind and DeepCopyObject make owner a runtime.Object, which
// client-go's informers expect of what they store. Cached owners are
// never changed, so a copy may share their slices.
func (o *owner) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (o *owner) DeepCopyObject() runtime.Object {
	out := *o
	return &out
}

func ownerOf(u *unstructured.Unstructured) *owner {
	o := &owner{kind: u.GetKind()}
	o.Namespace = unique.Make(u.GetNamespace()).Value()
	o.Name = u.GetName()
	o.ResourceVersion = u.GetResourceVersion()
	o.interval, _, _ = unstructured.NestedString(u.Object, "spec", "interval")
	o.serviceAccount, _, _ = unstructured.NestedString(u.Object, "spec", "serviceAccountName")
	o.suspended, _, _ = unstructured.NestedBool(u.Object, "spec", "suspend")
	var ignore []any
	switch o.kind {
	case kindArtifactGenerator:
		generatorOf(u, o)
	case kindHelmRelease:
		o.from, o.revision = helmSource(u)
		o.driftMode, _, _ = unstructured.NestedString(u.Object, "spec", "driftDetection", "mode")
		o.release, o.releaseNamespace = releaseOf(u)
		helmChart, _, _ := unstructured.NestedString(u.Object, "status", "helmChart")
		o.chart = parseHelmChart(helmChart)
		ignore, _, _ = unstructured.NestedSlice(u.Object, "spec", "driftDetection", "ignore")
	default:
		o.from, o.revision = kustomizeSource(u)
		ignore, _, _ = unstructured.NestedSlice(u.Object, "spec", "ignore")
	}
	o.ignore = ignoreRules(ignore)
	if o.kind == kindArtifactGenerator {
		// Its inventory is a list of its own (generatorOf).
	} else if entries, found, _ := unstructured.NestedSlice(u.Object, "status", "inventory", "entries"); found {
		o.hasInventory = true
		ids := make([]string, 0, len(entries))
		var kinds []schema.GroupVersionKind
		for _, e := range entries {
			if m, ok := e.(map[string]any); ok {
				if id, ok := m["id"].(string); ok {
					ids = append(ids, id)
					if gvk, ok := entryKind(id, m["v"]); ok {
						kinds = append(kinds, gvk)
					}
				}
			}
		}
		o.inventory = gitops.NewInventory(ids)
		o.kinds = gitops.DistinctKinds(kinds)
	} else if _, found, _ := unstructured.NestedMap(u.Object, "status", "inventory"); found {
		o.hasInventory = true
	}
	o.what = "Flux " + o.kind + " " + o.Namespace + "/" + o.Name
	o.display = o.what + " (" + o.from
	if o.revision != "" {
		o.display += ", revision " + o.revision
	}
	o.display += ")"
	o.revertText = o.revert()
	if o.serviceAccount != "" {
		o.writer = serviceAccountUser(o.Namespace, o.serviceAccount)
	}
	o.suspendHint = "to pause Flux, suspend " + o.kind + " " + o.Namespace + "/" + o.Name + " (flux suspend)"
	if o.kind == kindArtifactGenerator {
		o.suspendHint = "to pause source-watcher, annotate ArtifactGenerator " + o.Namespace + "/" + o.Name + " with " + MarkerGeneratorReconcile + "=disabled"
	}
	return o
}

// generatedChart is the source object helm-controller generates from a
// HelmRelease's spec.chart, in source.toolkit.fluxcd.io.
type generatedChart struct{ kind, namespace, name string }

// sourceGroup is the group of Flux's sources.
const sourceGroup = "source.toolkit.fluxcd.io"

// parseHelmChart reads a HelmRelease's status.helmChart as helm-controller
// writes it (HelmReleaseStatus.SetChart): "<namespace>/<name>" for a
// HelmChart, "<kind>/<namespace>/<name>" for another kind (Flux 2.10's
// OCIRepository). Anything else is no chart.
func parseHelmChart(s string) generatedChart {
	parts := strings.Split(s, "/")
	switch {
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return generatedChart{"HelmChart", parts[0], parts[1]}
	case len(parts) == 3 && (parts[0] == "HelmChart" || parts[0] == "OCIRepository") && parts[1] != "" && parts[2] != "":
		return generatedChart{parts[0], parts[1], parts[2]}
	}
	return generatedChart{}
}

// generated reports whether ref is the chart source the HelmRelease
// generated.
func (o *owner) generated(ref gitops.Ref) bool {
	return o.chart.name != "" && ref.Group == sourceGroup && ref.Kind == o.chart.kind &&
		ref.Namespace == o.chart.namespace && ref.Name == o.chart.name
}

// serviceAccountUser is a service account's user name.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// entryKind is the kind of an inventory entry: the group and kind of its
// id, and its "v", the version Flux applied it at.
func entryKind(id string, v any) (schema.GroupVersionKind, bool) {
	version, _ := v.(string)
	group, kind, ok := gitops.InventoryGroupKind(id)
	if !ok || version == "" {
		return schema.GroupVersionKind{}, false
	}
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}, true
}

// kustomizeSource is a Kustomization's source, path and last applied
// revision.
func kustomizeSource(u *unstructured.Unstructured) (from, revision string) {
	from = sourceRef(u, "spec", "sourceRef")
	if path, _, _ := unstructured.NestedString(u.Object, "spec", "path"); path != "" {
		from += ", path " + path
	}
	revision, _, _ = unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	return from, shortRevision(revision)
}

// helmSource is a HelmRelease's chart and where it comes from, and the
// chart version last released.
func helmSource(u *unstructured.Unstructured) (from, revision string) {
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "chart", "kind")
	if url, _, _ := unstructured.NestedString(u.Object, "spec", "chart", "spec", "url"); kind == "OCIRepository" && url != "" {
		// Flux 2.10: spec.chart generates an OCIRepository of this URL.
		from = "chart " + url
	} else if chart, _, _ := unstructured.NestedString(u.Object, "spec", "chart", "spec", "chart"); chart != "" {
		from = "chart " + chart + " from " + sourceRef(u, "spec", "chart", "spec", "sourceRef")
	} else {
		from = "chart from " + sourceRef(u, "spec", "chartRef")
	}
	if history, _, _ := unstructured.NestedSlice(u.Object, "status", "history"); len(history) > 0 {
		if h, ok := history[0].(map[string]any); ok {
			revision, _ = h["chartVersion"].(string)
		}
	}
	if revision == "" {
		revision, _, _ = unstructured.NestedString(u.Object, "status", "lastAttemptedRevision")
	}
	return from, shortRevision(revision)
}

// sourceRef names a Flux source reference: "GitRepository ns/name", its
// namespace defaulting to the referrer's.
func sourceRef(u *unstructured.Unstructured, path ...string) string {
	ref, _, _ := unstructured.NestedStringMap(u.Object, path...)
	ns := ref["namespace"]
	if ns == "" {
		ns = u.GetNamespace()
	}
	return strings.TrimSpace(ref["kind"] + " " + ns + "/" + ref["name"])
}

// shortRevision cuts a revision's digest to seven characters, as people
// read them: "main@sha1:1a2b3c4".
func shortRevision(r string) string {
	for _, algo := range []string{"sha1:", "sha256:"} {
		if i := strings.Index(r, algo); i >= 0 && len(r) > i+len(algo)+7 {
			return r[:i+len(algo)+7]
		}
	}
	return r
}

// releaseOf is a HelmRelease's Helm release name and namespace, as
// helm-controller derives them (GetReleaseName, GetReleaseNamespace, and
// release.ShortenName for names over 53 characters).
func releaseOf(u *unstructured.Unstructured) (name, namespace string) {
	target, _, _ := unstructured.NestedString(u.Object, "spec", "targetNamespace")
	name, _, _ = unstructured.NestedString(u.Object, "spec", "releaseName")
	switch {
	case name != "":
	case target != "":
		name = target + "-" + u.GetName()
	default:
		name = u.GetName()
	}
	if len(name) > 53 {
		sum := sha256.Sum256([]byte(name))
		name = name[:40] + "-" + hex.EncodeToString(sum[:])[:12]
	}
	namespace = target
	if namespace == "" {
		namespace = u.GetNamespace()
	}
	return name, namespace
}
