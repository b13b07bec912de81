package fluxguard

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/object"
)

// source-watcher's ArtifactGenerator (source.extensions.fluxcd.io) owns
// the ExternalArtifacts it generates and, from source-watcher 2.3 (Flux
// 2.10) with spec.managedNamespaces, the Namespaces it manages. It labels
// what it applies with LabelArtifactGenerator, whose value is the
// generator's UID, and records it in status.inventory: entries of kind
// (ExternalArtifact when empty, or Namespace), name and namespace.
const (
	LabelArtifactGenerator = "source.extensions.fluxcd.io/generator"
	// MarkerGeneratorReconcile=disabled on an ArtifactGenerator pauses it.
	MarkerGeneratorReconcile = "source.extensions.fluxcd.io/reconcile"
	kindArtifactGenerator    = "ArtifactGenerator"
)

var (
	artifactGenerators = schema.GroupResource{Group: "source.extensions.fluxcd.io", Resource: "artifactgenerators"}
	// generatorFieldManagers: source-watcher applies its objects
	// server-side as source-watcher.
	generatorFieldManagers = []string{"source-watcher"}
)

const generatorKeeps = "source-watcher keeps fields others set"

// generatorOf fills what an ArtifactGenerator's owner holds beyond the
// common fields: its UID, its sources, whether it is paused, and its
// inventory as inventory ids.
func generatorOf(u *unstructured.Unstructured, o *owner) {
	o.uid = string(u.GetUID())
	o.from = generatorSources(u)
	if strings.EqualFold(u.GetAnnotations()[MarkerGeneratorReconcile], "disabled") {
		o.suspended = true
	}
	entries, found, _ := unstructured.NestedSlice(u.Object, "status", "inventory")
	o.hasInventory = found
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		m, _ := e.(map[string]any)
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		ns, _ := m["namespace"].(string)
		if name == "" {
			continue
		}
		switch kind {
		case "", "ExternalArtifact":
			ids = append(ids, gitops.InventoryID(ns, name, sourceGroup, "ExternalArtifact"))
		case "Namespace":
			ids = append(ids, gitops.InventoryID("", name, "", "Namespace"))
		}
	}
	o.inventory = gitops.NewInventory(ids)
}

// generatorSources names an ArtifactGenerator's sources: "sources
// GitRepository apps/repo, OCIRepository apps/charts".
func generatorSources(u *unstructured.Unstructured) string {
	sources, _, _ := unstructured.NestedSlice(u.Object, "spec", "sources")
	var names []string
	for _, s := range sources {
		m, _ := s.(map[string]any)
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		ns, _ := m["namespace"].(string)
		if ns == "" {
			ns = u.GetNamespace()
		}
		names = append(names, kind+" "+ns+"/"+name)
	}
	if len(names) == 0 {
		return "no sources"
	}
	return "sources " + strings.Join(names, ", ")
}

// generatorClaim is the UID the object's LabelArtifactGenerator names, if
// any.
func generatorClaim(v *object.View) (string, bool) {
	uid, ok := v.Label(LabelArtifactGenerator)
	return uid, ok && uid != ""
}

// generatorOwner finds the ArtifactGenerator of uid among the cached ones
// and describes its hold on the object.
func (r resolver) generatorOwner(_ context.Context, uid string, ref gitops.Ref, v *object.View) (gitops.Owner, error) {
	objs, err := r.Cache.List(artifactGenerators)
	if err != nil {
		return gitops.Owner{}, fmt.Errorf("listing Flux ArtifactGenerators: %w", err)
	}
	for _, obj := range objs {
		if o, ok := obj.(*owner); ok && o.uid == uid {
			return r.ownerFor(o, ref, v), nil
		}
	}
	return gitops.Owner{Name: "Flux ArtifactGenerator (UID " + uid + ")",
		Why: "owner not found: no Flux ArtifactGenerator has UID " + uid + ", so source-watcher does not revert the object"}, nil
}
