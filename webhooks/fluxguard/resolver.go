package fluxguard

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/object"
)

// Flux's ownership labels, set on every object its controllers apply
// (after the build, so Git cannot forge them through Flux), and its
// opt-out markers, honoured as labels or annotations with values in any
// case, as Flux reads them.
const (
	LabelKustomizationName      = "kustomize.toolkit.fluxcd.io/name"
	LabelKustomizationNamespace = "kustomize.toolkit.fluxcd.io/namespace"
	LabelHelmReleaseName        = "helm.toolkit.fluxcd.io/name"
	LabelHelmReleaseNamespace   = "helm.toolkit.fluxcd.io/namespace"

	MarkerReconcile      = "kustomize.toolkit.fluxcd.io/reconcile"
	MarkerSSA            = "kustomize.toolkit.fluxcd.io/ssa"
	MarkerPrune          = "kustomize.toolkit.fluxcd.io/prune"
	MarkerDriftDetection = "helm.toolkit.fluxcd.io/driftDetection"

	annotationReleaseName      = "meta.helm.sh/release-name"
	annotationReleaseNamespace = "meta.helm.sh/release-namespace"
)

const (
	kindKustomization = "Kustomization"
	kindHelmRelease   = "HelmRelease"
)

// The field managers Flux's controllers apply with: kustomize-controller
// applies a Kustomization's objects server-side as kustomize-controller,
// helm-controller installs a HelmRelease's through Helm as
// helm-controller.
var (
	kustomizeFieldManagers = []string{"kustomize-controller"}
	helmFieldManagers      = []string{"helm-controller"}
)

var (
	kustomizations = schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"}
	helmReleases   = schema.GroupResource{Group: "helm.toolkit.fluxcd.io", Resource: "helmreleases"}
)

// records are Flux's records of what it applied: the owners' inventories.
var records = []gitops.Record{
	{Resource: kustomizations, SubResource: "status", Path: []string{"status", "inventory"}},
	{Resource: helmReleases, SubResource: "status", Path: []string{"status", "inventory"}},
}

// optOutPaths are the opt-out markers as pointers, for the guard's
// controlled opt-out write.
var optOutPaths = func() []object.Pointer {
	var out []object.Pointer
	for _, k := range []string{MarkerReconcile, MarkerSSA, MarkerPrune, MarkerDriftDetection} {
		out = append(out, object.Pointer{"metadata", "annotations", k}, object.Pointer{"metadata", "labels", k})
	}
	return out
}()

// resolver reads Flux's ownership: the labels name a Kustomization or
// HelmRelease, whose own record (its inventory, or for a HelmRelease
// without one its Helm release) must list the object.
type resolver struct {
	owners       gitops.OwnerCache
	defaultSA    string
	optOutGroups []string
}

// claimed is one owner the labels name.
type claimed struct {
	kind, namespace, name string
}

func (c claimed) String() string { return c.kind + " " + c.namespace + "/" + c.name }

// claims reads the labels: an owner is claimed when both its name and
// namespace labels are set (Flux prunes nothing else).
func claims(v *object.View) (keys []string, owners []claimed) {
	for _, l := range []struct{ kind, name, namespace string }{
		{kindKustomization, LabelKustomizationName, LabelKustomizationNamespace},
		{kindHelmRelease, LabelHelmReleaseName, LabelHelmReleaseNamespace},
	} {
		name, hasName := v.Label(l.name)
		ns, hasNS := v.Label(l.namespace)
		if hasName {
			keys = append(keys, "label "+l.name)
		}
		if hasNS {
			keys = append(keys, "label "+l.namespace)
		}
		if hasName && hasNS && name != "" && ns != "" {
			owners = append(owners, claimed{l.kind, ns, name})
		}
	}
	return keys, owners
}

func (r resolver) Claim(_ gitops.Ref, v *object.View) gitops.Claim {
	keys, owners := claims(v)
	c := gitops.Claim{Keys: keys, Claims: len(owners) > 0}
	named := make([]string, len(owners))
	for i, o := range owners {
		named[i] = o.String()
	}
	c.Named = strings.Join(named, ", ")
	if len(keys) > 0 && !c.Claims {
		c.NotClaimed = "Flux's labels are incomplete (Flux sets both name and namespace): no Flux owner claims the object"
	}
	return c
}

func (r resolver) Owners(_ context.Context, ref gitops.Ref, v *object.View) ([]gitops.Owner, error) {
	_, claimedBy := claims(v)
	out := make([]gitops.Owner, 0, len(claimedBy))
	for _, c := range claimedBy {
		gr := kustomizations
		if c.kind == kindHelmRelease {
			gr = helmReleases
		}
		obj, found, err := r.owners.Lookup(gr, c.namespace, c.name)
		if err != nil {
			return nil, fmt.Errorf("looking up Flux %s: %w", c, err)
		}
		o, ok := obj.(*owner)
		if !found || !ok {
			out = append(out, gitops.Owner{Name: "Flux " + c.String(),
				Why: fmt.Sprintf("owner not found: Flux %s does not exist, so no Flux controller reverts the object", c)})
			continue
		}
		out = append(out, r.ownerFor(o, ref, v))
	}
	return out, nil
}

// ownerFor describes a cached owner's hold on the object ref names, whose
// stored form v holds.
func (r resolver) ownerFor(o *owner, ref gitops.Ref, v *object.View) gitops.Owner {
	name := fmt.Sprintf("Flux %s %s/%s (%s", o.kind, o.Namespace, o.Name, o.from)
	if o.revision != "" {
		name += ", revision " + o.revision
	}
	out := gitops.Owner{Name: name + ")", Revert: o.revert(), Skip: skipFor(o.ignore, ref, v), Hint: r.hint(o),
		FieldManagers: kustomizeFieldManagers, IgnoreIn: "the Kustomization's spec.ignore"}
	if o.kind == kindHelmRelease {
		out.FieldManagers, out.IgnoreIn = helmFieldManagers, "the HelmRelease's spec.driftDetection.ignore"
	}
	if sa := o.serviceAccount; sa != "" || r.defaultSA != "" {
		if sa == "" {
			sa = r.defaultSA
		}
		out.Writers = []string{"system:serviceaccount:" + o.Namespace + ":" + sa}
	}
	out.Manages, out.Why = o.lists(ref, v)
	if o.suspended {
		out.Paused = fmt.Sprintf("Flux %s %s/%s is suspended", o.kind, o.Namespace, o.Name)
	}
	out.OptedOut = o.optedOut(v)
	return out
}

// lists reports whether the owner's record lists the object: its
// inventory, or for a HelmRelease that keeps none, its Helm release.
func (o *owner) lists(ref gitops.Ref, v *object.View) (bool, string) {
	what := fmt.Sprintf("Flux %s %s/%s", o.kind, o.Namespace, o.Name)
	if o.hasInventory {
		if o.inventory.Has(gitops.InventoryID(ref.Namespace, ref.Name, ref.Group, ref.Kind)) {
			return true, ""
		}
		return false, what + " does not list the object in its inventory (pruning disabled, removed from Git, or labels set by hand): not Flux's"
	}
	if o.kind == kindHelmRelease {
		rel, _ := v.Annotation(annotationReleaseName)
		ns, _ := v.Annotation(annotationReleaseNamespace)
		if rel == o.release && ns == o.releaseNamespace {
			return true, ""
		}
		return false, fmt.Sprintf("%s installs Helm release %s/%s, and the object belongs to release %q in %q: not Flux's", what, o.releaseNamespace, o.release, rel, ns)
	}
	return false, what + " has no inventory yet: it has not applied the object"
}

// revert says what Flux does with a hand edit.
func (o *owner) revert() string {
	if o.kind == kindHelmRelease && strings.EqualFold(o.driftMode, "warn") {
		// helm-controller reports the drift in events and logs, and
		// corrects nothing.
		return "its drift detection only warns, so the change would persist, reported as drift, until the next upgrade of the release overwrites it"
	}
	if o.kind == kindHelmRelease && !strings.EqualFold(o.driftMode, "enabled") {
		return "its drift detection is " + orDisabled(o.driftMode) + ", so the change would persist unseen until the next upgrade of the release overwrites it"
	}
	if o.interval == "" {
		return "it is reverted at the next reconcile"
	}
	return "it is reverted at the next reconcile (interval " + o.interval + ")"
}

func orDisabled(mode string) string {
	if mode == "" {
		return "disabled"
	}
	return mode
}

// optedOut reads Flux's opt-out markers on the stored object.
func (o *owner) optedOut(v *object.View) string {
	marker := func(key string) string {
		if s, ok := v.Annotation(key); ok {
			return s
		}
		s, _ := v.Label(key)
		return s
	}
	if o.kind == kindHelmRelease {
		if strings.EqualFold(marker(MarkerDriftDetection), "disabled") {
			return MarkerDriftDetection + "=disabled: helm-controller does not correct the object"
		}
		return ""
	}
	switch {
	case strings.EqualFold(marker(MarkerReconcile), "disabled"):
		return MarkerReconcile + "=disabled: kustomize-controller leaves the object alone"
	case strings.EqualFold(marker(MarkerSSA), "Ignore"):
		return MarkerSSA + "=Ignore: kustomize-controller leaves the object alone"
	case strings.EqualFold(marker(MarkerSSA), "IfNotPresent"):
		return MarkerSSA + "=IfNotPresent: kustomize-controller only creates the object"
	}
	return ""
}

// hint says how to pause Flux for one object, when someone may.
func (r resolver) hint(o *owner) string {
	marker := MarkerReconcile + "=disabled"
	if o.kind == kindHelmRelease {
		marker = MarkerDriftDetection + "=disabled"
	}
	if len(r.optOutGroups) == 0 {
		return fmt.Sprintf("to pause Flux, suspend %s %s/%s (flux suspend)", o.kind, o.Namespace, o.Name)
	}
	return fmt.Sprintf("to pause Flux for this object, a member of %s can set %s", strings.Join(r.optOutGroups, " or "), marker)
}

// OwnersOf finds the owners whose inventory lists an object, for a scale
// request, whose Scale carries no labels.
func (r resolver) OwnersOf(_ context.Context, ref gitops.Ref) ([]gitops.Owner, error) {
	id := gitops.InventoryID(ref.Namespace, ref.Name, ref.Group, ref.Kind)
	var out []gitops.Owner
	for _, gr := range []schema.GroupResource{kustomizations, helmReleases} {
		objs, err := r.owners.List(gr)
		if err != nil {
			return nil, fmt.Errorf("listing Flux owners: %w", err)
		}
		for _, obj := range objs {
			if o, ok := obj.(*owner); ok && o.inventory.Has(id) {
				out = append(out, r.ownerFor(o, ref, object.New(nil)))
			}
		}
	}
	return out, nil
}
