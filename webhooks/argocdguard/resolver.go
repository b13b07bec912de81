package argocdguard

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/object"
)

// Argo CD's keys.
const (
	// AnnotationTrackingID is Argo CD's ownership marker (its default
	// tracking method since 3.0): "<app>:<group>/<kind>:<namespace>/<name>",
	// naming the Application and the object it sits on.
	AnnotationTrackingID = "argocd.argoproj.io/tracking-id"
	// AnnotationInstallationID names the Argo CD instance that synced an
	// object, where instances set installationID in argocd-cm: an instance
	// tracks only the objects whose id is its own.
	AnnotationInstallationID = "argocd.argoproj.io/installation-id"
	// annotationSkipReconcile on an Application pauses Argo CD for it.
	annotationSkipReconcile = "argocd.argoproj.io/skip-reconcile"
	// The per-object opt-outs Argo CD honours.
	annotationCompareOptions = "argocd.argoproj.io/compare-options"
	annotationSyncOptions    = "argocd.argoproj.io/sync-options"
)

var applications = schema.GroupResource{Group: "argoproj.io", Resource: "applications"}

// records are Argo CD's records of what it manages: an Application's
// status.resources, which says what it would prune. Applications have no
// status subresource: the record is written with the object.
var records = []gitops.Record{{Resource: applications, Path: []string{"status", "resources"}}}

// fieldManagers are the field managers Argo CD's application controller
// writes objects with: argocd-controller for its applies, server-side
// and client-side alike (Argo CD's ArgoCDSSAManager, which gitops-engine
// also sets as kubectl apply's field manager), and
// argocd-application-controller, its user agent, which the API server
// records where no manager is set (creates and replaces).
var fieldManagers = []string{"argocd-controller", "argocd-application-controller"}

// argoKeeps is what Argo CD does with a field neither Git nor its last
// apply holds: its diff leaves it out, so self-heal never touches it.
const argoKeeps = "Argo CD keeps fields that neither Git nor its last apply holds"

var optOutPaths = []object.Pointer{
	{"metadata", "annotations", annotationCompareOptions},
	{"metadata", "annotations", annotationSyncOptions},
}

// resolver reads Argo CD's ownership: the tracking id must name the very
// object it sits on (Argo CD ignores a copied one), and the Application
// it names must exist and not list the object for pruning.
type resolver struct {
	// Caches hold the Applications and AppProjects, and read a scaled
	// workload's managedFields.
	gitops.Caches
	controlPlane  string
	trackingLabel string
	// markerKeys are the tracking annotation's and label's Claim.Keys.
	markerKeys []string
	// installationID is the guarded instance's installationID.
	installationID string
	// impersonation follows Argo CD's sync impersonation, reading the
	// AppProjects.
	impersonation bool
}

// newResolver builds the resolver of a configuration.
func newResolver(c Config) *resolver {
	return &resolver{
		Caches: gitops.NewCaches(), controlPlane: c.ControlPlaneNamespace, trackingLabel: c.TrackingLabel,
		markerKeys:     []string{"annotation " + AnnotationTrackingID, "label " + c.TrackingLabel},
		installationID: c.InstallationID,
		impersonation:  c.SyncImpersonation,
	}
}

// trackingID is a parsed tracking id.
type trackingID struct {
	app                          string
	group, kind, namespace, name string
}

// parseTrackingID parses an id as Argo CD does: three parts split at the
// first two ":", the last two each "<a>/<b>".
func parseTrackingID(s string) (trackingID, bool) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 || parts[0] == "" {
		return trackingID{}, false
	}
	gk := strings.Split(parts[1], "/")
	nn := strings.Split(parts[2], "/")
	if len(gk) != 2 || len(nn) != 2 || gk[1] == "" || nn[1] == "" {
		return trackingID{}, false
	}
	return trackingID{app: parts[0], group: gk[0], kind: gk[1], namespace: nn[0], name: nn[1]}, true
}

// names reports whether the id references the object ref names: its
// group, kind and name, and its namespace unless the object is
// cluster-scoped (whose ids hold the Application's destination
// namespace), as Argo CD's own check reads it.
func (t trackingID) names(ref gitops.Ref) bool {
	return t.group == ref.Group && t.kind == ref.Kind && t.name == ref.Name && (ref.Namespace == "" || ref.Namespace == t.namespace)
}

// application is the Application an instance name means.
func (r resolver) application(instance string) (namespace, name string) {
	if ns, n, ok := strings.Cut(instance, "_"); ok {
		return ns, n
	}
	return r.controlPlane, instance
}

// instance reads the object's claim: the Application's instance name, by
// its tracking id, or by the tracking label where configured. unlisted,
// when set, says why the claim holds only for an object the
// Application's status.resources lists: a label, which charts copy, or
// an id naming an Application of the control-plane namespace as
// "<namespace>_<name>", which Argo CD never writes (it names those by
// their name alone) and so follows only for objects in Git.
func (r resolver) instance(ref gitops.Ref, v *object.View) (claim gitops.Claim, instance, unlisted string) {
	id, hasID := v.Annotation(AnnotationTrackingID)
	var label string
	hasLabel := false
	if r.trackingLabel != "" {
		label, hasLabel = v.Label(r.trackingLabel)
	}
	claim.Keys = r.keys(hasID, hasLabel)
	if hasID {
		t, ok := parseTrackingID(id)
		switch {
		case !ok:
			claim.NotClaimed = fmt.Sprintf("%s %q does not parse: Argo CD does not track the object by it", AnnotationTrackingID, id)
		case !t.names(ref):
			claim.NotClaimed = fmt.Sprintf("%s names %s/%s %s/%s, not this object (a copied annotation): Argo CD does not track the object by it", AnnotationTrackingID, t.group, t.kind, t.namespace, t.name)
		default:
			instance = t.app
			if ns, name, ok := strings.Cut(t.app, "_"); ok && ns == r.controlPlane {
				unlisted = fmt.Sprintf("its %s names the Application %s, where Argo CD writes %s, so the id alone does not make it Argo CD's", AnnotationTrackingID, t.app, name)
			}
		}
	}
	if instance == "" && hasLabel && label != "" {
		instance, unlisted = label, fmt.Sprintf("its %s label alone does not make it Argo CD's", r.trackingLabel)
	}
	if instance != "" {
		if got, _ := v.Annotation(AnnotationInstallationID); got != r.installationID {
			claim.NotClaimed = fmt.Sprintf("%s is %q and the guarded Argo CD's installationID %q: another Argo CD instance tracks the object", AnnotationInstallationID, got, r.installationID)
			return claim, "", ""
		}
		ns, name := r.application(instance)
		claim.Claims, claim.Named, claim.NotClaimed = true, "Application "+ns+"/"+name, ""
	}
	return claim, instance, unlisted
}

// keys are Claim.Keys for the markers present, from a list made once.
func (r resolver) keys(hasID, hasLabel bool) []string {
	switch {
	case hasID && hasLabel:
		return r.markerKeys
	case hasID:
		return r.markerKeys[:1]
	case hasLabel:
		return r.markerKeys[1:]
	}
	return nil
}

func (r resolver) Claim(ref gitops.Ref, v *object.View) gitops.Claim {
	c, _, _ := r.instance(ref, v)
	return c
}

func (r resolver) Owners(_ context.Context, ref gitops.Ref, v *object.View) ([]gitops.Owner, error) {
	_, instance, unlisted := r.instance(ref, v)
	if instance == "" {
		return nil, nil
	}
	a, ns, name, err := r.lookup(instance)
	if err != nil {
		return nil, err
	}
	if a == nil {
		what := "Argo CD Application " + ns + "/" + name
		return []gitops.Owner{{Name: what, Why: "owner not found: " + what + " does not exist, so Argo CD does not manage the object"}}, nil
	}
	o := r.ownerFor(a, ref)
	if unlisted != "" && !a.resources.Lists(ref) {
		o.Manages, o.Why = false, fmt.Sprintf("Argo CD Application %s/%s does not list the object in its status.resources: %s", a.Namespace, a.Name, unlisted)
	}
	return []gitops.Owner{o}, nil
}

// lookup finds the Application an instance name means in the cache; nil
// when there is none.
func (r resolver) lookup(instance string) (a *application, namespace, name string, err error) {
	namespace, name = r.application(instance)
	a, found, err := gitops.Lookup[*application](r.Cache, applications, namespace, name)
	if err != nil {
		return nil, namespace, name, fmt.Errorf("looking up Argo CD Application %s/%s: %w", namespace, name, err)
	}
	if !found {
		return nil, namespace, name, nil
	}
	return a, namespace, name, nil
}

// ownerFor describes an Application's hold on the object ref names.
func (r resolver) ownerFor(a *application, ref gitops.Ref) gitops.Owner {
	o := gitops.Owner{
		Name: a.display, Manages: true, Revert: a.revertText, Skip: a.skipFor(ref), Hint: a.hint,
		FieldManagers: fieldManagers, IgnoreIn: "the Application's spec.ignoreDifferences", Undeclared: argoKeeps,
		// Argo CD applies client-side unless ServerSideApply=true, and
		// diffs against what its last-applied annotation holds.
		LastApplied: true,
	}
	if a.pruning.Lists(ref) {
		o.Manages, o.Why = false, a.what+" lists the object for pruning: it is no longer in Git"
	}
	if a.skipReconcile {
		o.Paused = a.what + " has " + annotationSkipReconcile + "=true"
	}
	if w := r.syncWriter(a); w != "" {
		o.Writers = []string{w}
	}
	return o
}

// OwnersOf finds the Applications whose status lists an object, for a
// scale request, whose Scale carries no annotations.
func (r resolver) OwnersOf(_ context.Context, ref gitops.Ref) ([]gitops.Owner, error) {
	objs, err := r.Cache.List(applications)
	if err != nil {
		return nil, fmt.Errorf("listing Argo CD Applications: %w", err)
	}
	var out []gitops.Owner
	for _, obj := range objs {
		if a, ok := obj.(*application); ok && a.resources.Lists(ref) {
			out = append(out, r.ownerFor(a, ref))
		}
	}
	return out, nil
}
