// Package fleetguard refuses manual changes to objects deployed by Fleet.
// A hand edit or delete of a GitOps-managed object silently diverges from
// Git until Fleet reverts it, and Fleet's status keeps reporting the bundle
// as ready meanwhile; fleetguard refuses the write instead and says where
// to make the change.
package fleetguard

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Rule is the fleetguard admission handler: the GitOps guards' engine
// with Fleet's resolver, which reads Scale requests' workloads from a
// metadata cache.
type Rule struct {
	guard *gitops.Guard
	// parents reads workloads' metadata for scale requests; it is the
	// manager's cache once SetupWithManager ran.
	parents client.Reader
	// lookupTimeout bounds a cache read on the request path.
	lookupTimeout time.Duration
}

var _ rule.Rule = (*Rule)(nil)

// New builds the rule from its configuration and the global break-glass
// group, which denial messages name. It touches no cluster. Pointers that
// do not parse are skipped; Validate reports them before New is called.
func New(c Config, breakGlassGroup string) *Rule {
	c.Default()
	r := &Rule{lookupTimeout: time.Second}
	r.guard = gitops.New(gitops.Options{
		Rule: Name, Tool: "Fleet", AgentName: "the Fleet agent",
		Settings: c.Settings, Agent: c.Agent(), BreakGlassGroup: breakGlassGroup, Markers: markers,
	}, resolver{r})
	return r
}

// Handle decides one admission request as if the rule were enforced.
func (r *Rule) Handle(ctx context.Context, req *rule.Request) admission.Response {
	return r.guard.Handle(ctx, req)
}

const appliedWithOwnerReason = "object set has an owner (" + AnnotationOwnerGVK + "): applied by a controller, not deployed from a Fleet bundle"

// Fleet's ownership keys, as Fleet's agent writes them on every object it
// deploys (wrangler's objectset apply, used by Fleet's Helm post-renderer),
// and Helm's release annotations, which name the release Fleet installed.
const (
	// LabelHash marks an object as a member of an object set; the webhook's
	// objectSelector matches it, so unlabelled objects never reach Steward.
	LabelHash = "objectset.rio.cattle.io/hash"
	// AnnotationID names the object set: "default-<bundle deployment>",
	// with the agent scope appended when one is set.
	AnnotationID = "objectset.rio.cattle.io/id"
	// AnnotationOwnerGVK is set when an object set has an owning object.
	// Fleet's agent applies bundles without one; Rancher and Fleet's
	// controller apply their own objects with one, and those are not
	// bundle content.
	AnnotationOwnerGVK = "objectset.rio.cattle.io/owner-gvk"
	// Helm's release annotations.
	AnnotationReleaseName      = "meta.helm.sh/release-name"
	AnnotationReleaseNamespace = "meta.helm.sh/release-namespace"
)

// markers are Fleet's and Helm's keys, as the guard and its webhook's
// selector and conditions read them.
var markers = []object.Pointer{
	{"metadata", "labels", LabelHash}, {"metadata", "annotations", AnnotationID}, {"metadata", "annotations", AnnotationOwnerGVK},
	{"metadata", "annotations", AnnotationReleaseName}, {"metadata", "annotations", AnnotationReleaseNamespace},
}

// fleetIDPrefix is the label prefix Fleet's agent gives every object set
// id: the agent builds ids as SafeConcatName("default", bundleDeployment,
// [agentScope]), joining with "-" and shortening ids over 63 characters
// with a hash suffix.
const fleetIDPrefix = "default-"

// objectMeta is the part of an object's metadata this rule reads: its
// name and namespace, and of its labels and annotations only Fleet's and
// Helm's keys. A request's object is read in place through its view; a
// cached workload's keys are in maps.
type objectMeta struct {
	Name, Namespace     string
	Labels, Annotations map[string]string
	// view, when set, holds the labels and annotations instead of the
	// maps: a claim asks only whether keys are there, which the view
	// answers without copying anything.
	view *object.View
}

// metaOf is the metadata of a request's object, read in place. Its Name
// and Namespace stay empty: the guard names a request's object from the
// view itself (gitops.RefOf), and only a cached workload's meta is asked
// for its ref.
func metaOf(v *object.View) objectMeta { return objectMeta{view: v} }

func (m objectMeta) label(key string) string {
	if m.view != nil {
		s, _ := m.view.Label(key)
		return s
	}
	return m.Labels[key]
}

func (m objectMeta) annotation(key string) string {
	if m.view != nil {
		s, _ := m.view.Annotation(key)
		return s
	}
	return m.Annotations[key]
}

func (m objectMeta) hasLabel(key string) bool {
	if m.view != nil {
		return m.view.HasLabel(key)
	}
	_, ok := m.Labels[key]
	return ok
}

func (m objectMeta) hasAnnotation(key string) bool {
	if m.view != nil {
		return m.view.HasAnnotation(key)
	}
	_, ok := m.Annotations[key]
	return ok
}

// managed reports whether the object carries Fleet's object-set label.
func (m objectMeta) managed() bool { return m.hasLabel(LabelHash) }

// appliedWithOwner reports whether the object set has an owning object,
// which Fleet's agent never sets on bundle content.
func (m objectMeta) appliedWithOwner() bool { return m.hasAnnotation(AnnotationOwnerGVK) }

// The lists ownershipKeys returns; shared, and never changed by callers.
var (
	labelKey       = "label " + LabelHash
	annotationKey  = "annotation " + AnnotationID
	bothKeys       = []string{labelKey, annotationKey}
	labelKeys      = bothKeys[:1:1]
	annotationKeys = bothKeys[1:]
)

// ownershipKeys lists which of Fleet's two ownership keys the object has.
func (m objectMeta) ownershipKeys() []string {
	switch label, annotation := m.hasLabel(LabelHash), m.hasAnnotation(AnnotationID); {
	case label && annotation:
		return bothKeys
	case label:
		return labelKeys
	case annotation:
		return annotationKeys
	}
	return nil
}

// bundleDeployment derives the bundle deployment's name from the object
// set id the way Fleet builds it: "default-" followed by the bundle
// deployment's name (and the agent scope, if the agent has one). An id
// without the prefix is shown as it is.
func bundleDeployment(id string) string {
	name := strings.TrimPrefix(id, fleetIDPrefix)
	if name == "-" {
		return ""
	}
	return name
}

// owner describes who owns the object, for denial messages: the Fleet
// bundle deployment and the Helm release, as far as they are known.
func (m objectMeta) owner() string {
	bd, rel, ns := bundleDeployment(m.annotation(AnnotationID)), m.annotation(AnnotationReleaseName), ""
	if rel != "" {
		ns = m.annotation(AnnotationReleaseNamespace)
	}
	if bd == "" && rel == "" {
		if h := m.label(LabelHash); h != "" {
			return "object set " + h
		}
		return "owner not recorded"
	}
	const bdText, relText = "bundle deployment ", "Helm release "
	var b strings.Builder
	// One allocation: the denial names the owner on every refusal.
	b.Grow(len(bdText) + len(bd) + len(", ") + len(relText) + len(ns) + 1 + len(rel))
	if bd != "" {
		b.WriteString(bdText)
		b.WriteString(bd)
	}
	if rel != "" {
		if bd != "" {
			b.WriteString(", ")
		}
		b.WriteString(relText)
		if ns != "" {
			b.WriteString(ns)
			b.WriteByte('/')
		}
		b.WriteString(rel)
	}
	return b.String()
}

// resolver reads Fleet's ownership from the object alone: Fleet keeps no
// record of its objects in the cluster that Steward could read cheaply,
// and only its agent writes its keys (a forged key is refused on create
// and update). Scale requests read the workload's keys from the rule's
// metadata cache.
type resolver struct{ rule *Rule }

// Claim reads Fleet's keys: the object is claimed when it carries the
// object-set label and its object set has no owner.
func (resolver) Claim(_ gitops.Ref, v *object.View) gitops.Claim {
	return metaOf(v).claim()
}

func (m objectMeta) claim() gitops.Claim {
	managed, withOwner := m.managed(), m.appliedWithOwner()
	c := gitops.Claim{Claims: managed && !withOwner, Keys: m.ownershipKeys(), Named: m.owner()}
	if managed && withOwner {
		c.NotClaimed = appliedWithOwnerReason
	}
	return c
}

// Owners is the bundle deployment and Helm release the keys name.
func (resolver) Owners(_ context.Context, _ gitops.Ref, v *object.View) ([]gitops.Owner, error) {
	return metaOf(v).owners(), nil
}

func (m objectMeta) owners() []gitops.Owner {
	return []gitops.Owner{{Name: "Fleet (" + m.owner() + ")", Manages: true, Revert: "manual changes diverge from Git and Fleet reverts them",
		FieldManagers: agentFieldManagers, IgnoreIn: "fleet.yaml (diff.comparePatches)", Undeclared: fleetKeeps}}
}

// ref names a cached workload the way the guard's messages do.
func (m objectMeta) ref(gvk schema.GroupVersionKind) gitops.Ref {
	return gitops.Ref{GroupVersionKind: gvk, Namespace: m.Namespace, Name: m.Name}
}
