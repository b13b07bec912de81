package fluxguard

import (
	"context"
	"fmt"
	"slices"
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

// What Flux does with a field Git does not declare. kustomize-controller
// applies only Git's fields, and before each apply replaces the entries
// of the managers kubectl and before-first-apply (and its
// --override-manager list, overrideManagers here) with its own, so the
// next apply removes what they wrote: kubectlStrips are those prefixes, as
// it matches them. Entries written through a subresource (kubectl scale)
// are left alone. helm-controller's drift detection compares the release
// manifest, and fields outside the chart are not drift.
var kubectlStrips = []string{"kubectl", "before-first-apply"}

const (
	kustomizeKeeps       = "kustomize-controller keeps fields others set, unless a kubectl or before-first-apply field manager wrote them"
	kustomizeKeepsMerged = "kustomize-controller keeps fields others set on an ssa: Merge object"
	helmKeeps            = "helm-controller keeps fields outside the chart"
)

var (
	kustomizations = schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"}
	helmReleases   = schema.GroupResource{Group: "helm.toolkit.fluxcd.io", Resource: "helmreleases"}
)

// records are Flux's records of what it applied: the owners' inventories.
var records = []gitops.Record{
	{Resource: kustomizations, SubResource: "status", Path: []string{"status", "inventory"}},
	{Resource: helmReleases, SubResource: "status", Path: []string{"status", "inventory"}},
	{Resource: artifactGenerators, SubResource: "status", Path: []string{"status", "inventory"}},
}

// markers are Flux's ownership labels, as the guard keys on them.
var markers = []object.Pointer{
	{"metadata", "labels", LabelKustomizationName}, {"metadata", "labels", LabelKustomizationNamespace},
	{"metadata", "labels", LabelHelmReleaseName}, {"metadata", "labels", LabelHelmReleaseNamespace},
	{"metadata", "labels", LabelArtifactGenerator},
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
	// Caches hold the Kustomizations, HelmReleases and
	// ArtifactGenerators, and read a scaled workload's managedFields.
	gitops.Caches
	defaultSA string
	// optOutHint and helmOptOutHint say who may pause Flux for an object
	// of a Kustomization or a HelmRelease; empty without opt-out groups.
	optOutHint, helmOptOutHint string
	// strips are the prefixes of the field managers kustomize-controller
	// removes the fields of: kubectlStrips and the overrideManagers.
	strips []string
}

// newResolver builds the resolver of a configuration.
func newResolver(c Config) *resolver {
	r := &resolver{Caches: gitops.NewCaches(), defaultSA: c.DefaultServiceAccount,
		strips: append(slices.Clip(kubectlStrips), c.OverrideManagers...)}
	if len(c.OptOutGroups) > 0 {
		who := "to pause Flux for this object, a member of " + strings.Join(c.OptOutGroups, " or ") + " can set "
		r.optOutHint, r.helmOptOutHint = who+MarkerReconcile+"=disabled", who+MarkerDriftDetection+"=disabled"
	}
	return r
}

// claimed is one owner the labels name.
type claimed struct {
	kind, namespace, name string
}

func (c claimed) String() string { return c.kind + " " + c.namespace + "/" + c.name }

// ownerLabels are Flux's two pairs of ownership labels.
var ownerLabels = [2]struct{ kind, name, namespace string }{
	{kindKustomization, LabelKustomizationName, LabelKustomizationNamespace},
	{kindHelmRelease, LabelHelmReleaseName, LabelHelmReleaseNamespace},
}

// labelKeys are the ownership markers as Claim.Keys names them, by which
// of the four labels are present (bit i: label i of name, namespace,
// name, namespace), made once so a decision allocates none.
var labelKeys = func() [16][]string {
	var out [16][]string
	for mask := range out {
		for i, l := range ownerLabels {
			if mask&(1<<(2*i)) != 0 {
				out[mask] = append(out[mask], "label "+l.name)
			}
			if mask&(1<<(2*i+1)) != 0 {
				out[mask] = append(out[mask], "label "+l.namespace)
			}
		}
	}
	return out
}()

// labelClaims is what an object's labels say: which are present, and the
// owners they name (an owner needs both its name and namespace labels:
// Flux prunes nothing else).
type labelClaims struct {
	present int
	owners  [2]claimed
	n       int
}

func claims(v *object.View) labelClaims {
	var c labelClaims
	for i, l := range ownerLabels {
		name, hasName := v.Label(l.name)
		ns, hasNS := v.Label(l.namespace)
		if hasName {
			c.present |= 1 << (2 * i)
		}
		if hasNS {
			c.present |= 1 << (2*i + 1)
		}
		if hasName && hasNS && name != "" && ns != "" {
			c.owners[c.n] = claimed{l.kind, ns, name}
			c.n++
		}
	}
	return c
}

func (r resolver) Claim(_ gitops.Ref, v *object.View) gitops.Claim {
	lc := claims(v)
	c := gitops.Claim{Keys: labelKeys[lc.present], Claims: lc.n > 0}
	if uid, ok := generatorClaim(v); ok {
		c.Keys = append(slices.Clip(c.Keys), "label "+LabelArtifactGenerator)
		c.Claims = true
		if lc.n == 0 {
			c.Named = "Flux ArtifactGenerator (UID " + uid + ")"
			return c
		}
	}
	switch lc.n {
	case 1:
		c.Named = lc.owners[0].String()
	case 2:
		c.Named = lc.owners[0].String() + ", " + lc.owners[1].String()
	}
	if lc.present != 0 && !c.Claims {
		c.NotClaimed = "Flux's labels are incomplete (Flux sets both name and namespace): no Flux owner claims the object"
	}
	return c
}

func (r resolver) Owners(_ context.Context, ref gitops.Ref, v *object.View) ([]gitops.Owner, error) {
	lc := claims(v)
	out := make([]gitops.Owner, 0, lc.n)
	for _, c := range lc.owners[:lc.n] {
		gr := kustomizations
		if c.kind == kindHelmRelease {
			gr = helmReleases
		}
		o, found, err := gitops.Lookup[*owner](r.Cache, gr, c.namespace, c.name)
		if err != nil {
			return nil, fmt.Errorf("looking up Flux %s: %w", c, err)
		}
		if !found {
			out = append(out, gitops.Owner{Name: "Flux " + c.String(),
				Why: fmt.Sprintf("owner not found: Flux %s does not exist, so no Flux controller reverts the object", c)})
			continue
		}
		out = append(out, r.ownerFor(o, ref, v))
	}
	if uid, ok := generatorClaim(v); ok {
		o, err := r.generatorOwner(context.Background(), uid, ref, v)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// ownerFor describes a cached owner's hold on the object ref names, whose
// stored form v holds.
func (r resolver) ownerFor(o *owner, ref gitops.Ref, v *object.View) gitops.Owner {
	out := gitops.Owner{Name: o.display, Revert: o.revertText, Skip: skipFor(o.ignore, ref, v), Hint: r.hint(o),
		FieldManagers: kustomizeFieldManagers, IgnoreIn: "the Kustomization's spec.ignore",
		Undeclared: kustomizeKeeps, Strips: r.strips}
	if strings.EqualFold(marker(v, MarkerSSA), "Merge") {
		// kustomize-controller skips its cleanup of others' managers on
		// such an object (as a label or annotation, any case): nothing is
		// stripped.
		out.Undeclared, out.Strips = kustomizeKeepsMerged, nil
	}
	if o.kind == kindArtifactGenerator {
		out.FieldManagers, out.IgnoreIn = generatorFieldManagers, ""
		out.Undeclared, out.Strips = generatorKeeps, nil
	}
	if o.kind == kindHelmRelease {
		out.FieldManagers, out.IgnoreIn = helmFieldManagers, "the HelmRelease's spec.driftDetection.ignore"
		out.Undeclared, out.Strips = helmKeeps, nil
		if o.generated(ref) {
			// helm-controller applies the chart source it generates from
			// spec.chart at every reconcile, whatever drift detection says.
			out.Revert = o.chartRevert()
		}
	}
	switch {
	case o.writer != "":
		out.Writers = []string{o.writer}
	case r.defaultSA != "":
		out.Writers = []string{serviceAccountUser(o.Namespace, r.defaultSA)}
	}
	out.Manages, out.Why = o.lists(ref, v)
	if o.suspended {
		out.Paused = o.what + " is suspended"
	}
	out.OptedOut = o.optedOut(v)
	return out
}

// lists reports whether the owner's record lists the object: its
// inventory, or for a HelmRelease that keeps none, its Helm release; a
// HelmRelease's status.helmChart also records the chart source it
// generated (a HelmChart, or from Flux 2.10 an OCIRepository), which no
// inventory lists.
func (o *owner) lists(ref gitops.Ref, v *object.View) (bool, string) {
	what := o.what
	if o.kind == kindHelmRelease && o.generated(ref) {
		return true, ""
	}
	if o.hasInventory {
		if o.inventory.Lists(ref) {
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

// chartRevert says what helm-controller does with a hand edit of the
// chart source it generated.
func (o *owner) chartRevert() string {
	if o.interval == "" {
		return "helm-controller applies it again from the HelmRelease's spec.chart at the next reconcile"
	}
	return "helm-controller applies it again from the HelmRelease's spec.chart at the next reconcile (interval " + o.interval + ")"
}

// revert says what Flux does with a hand edit.
func (o *owner) revert() string {
	if o.kind == kindArtifactGenerator {
		return "source-watcher applies it again at its next reconcile"
	}
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
	marker := func(key string) string { return marker(v, key) }
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

// marker reads one of Flux's markers, which Flux honours as an annotation
// or a label.
func marker(v *object.View, key string) string {
	if s, ok := v.Annotation(key); ok {
		return s
	}
	s, _ := v.Label(key)
	return s
}

// hint says how to pause Flux for one object, when someone may, or else
// how to suspend its owner.
func (r resolver) hint(o *owner) string {
	switch {
	case r.optOutHint == "" || o.kind == kindArtifactGenerator:
		// The opt-out markers the hint names are kustomize-controller's
		// and helm-controller's.
		return o.suspendHint
	case o.kind == kindHelmRelease:
		return r.helmOptOutHint
	}
	return r.optOutHint
}

// OwnersOf finds the owners whose inventory lists an object, for a scale
// request, whose Scale carries no labels.
func (r resolver) OwnersOf(_ context.Context, ref gitops.Ref) ([]gitops.Owner, error) {
	var out []gitops.Owner
	for _, gr := range []schema.GroupResource{kustomizations, helmReleases} {
		objs, err := r.Cache.List(gr)
		if err != nil {
			return nil, fmt.Errorf("listing Flux owners: %w", err)
		}
		for _, obj := range objs {
			if o, ok := obj.(*owner); ok && o.inventory.Lists(ref) {
				out = append(out, r.ownerFor(o, ref, object.New(nil)))
			}
		}
	}
	return out, nil
}
