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

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Rule is the fleetguard admission handler: the GitOps guards' engine
// with Fleet's resolver, which reads Scale requests' workloads from a
// metadata cache.
type Rule struct {
	guard *gitops.Guard
	agent gitops.Identities
	// parents reads workloads' metadata for scale requests; it is the
	// manager's cache once SetupWithManager ran.
	parents client.Reader
	// lookupTimeout bounds a cache read on the request path.
	lookupTimeout time.Duration
}

var (
	_ rule.Rule                 = (*Rule)(nil)
	_ clustercache.ManagerSetup = (*Rule)(nil)
	_ rule.Inheritor            = (*Rule)(nil)
	_ rule.CacheScope           = (*Rule)(nil)
)

// New builds the rule from its configuration and the global break-glass
// group, which denial messages name. It touches no cluster. Pointers that
// do not parse are skipped; Validate reports them before New is called.
func New(c Config, breakGlassGroup string) *Rule {
	c.Default()
	agent := gitops.Identities{Users: c.AgentUsers, Groups: c.AgentGroups}
	r := &Rule{agent: agent, lookupTimeout: time.Second}
	r.guard = gitops.New(gitops.Options{
		Rule: Name, Tool: "Fleet", AgentName: "the Fleet agent",
		Agent: agent, Ignored: c.IgnoredFields, BreakGlassGroup: breakGlassGroup,
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

// fleetIDPrefix is the label prefix Fleet's agent gives every object set
// id: the agent builds ids as SafeConcatName("default", bundleDeployment,
// [agentScope]), joining with "-" and shortening ids over 63 characters
// with a hash suffix.
const fleetIDPrefix = "default-"

// objectMeta is the part of an object's metadata this rule reads: its
// name and namespace, and of its labels and annotations only Fleet's and
// Helm's keys.
type objectMeta struct {
	Name, GenerateName, Namespace string
	Labels, Annotations           map[string]string
}

// ownershipLabels and ownershipAnnotations are the only keys objectMeta's
// methods read; metaOf copies no others, so judging an update does not
// copy every label and annotation (kubectl's last-applied configuration
// is often the largest of them).
var (
	ownershipLabels      = []string{LabelHash}
	ownershipAnnotations = []string{AnnotationID, AnnotationOwnerGVK, AnnotationReleaseName, AnnotationReleaseNamespace}
)

// metaOf reads an object's metadata as the view holds it, whatever its
// form: an update is judged on what both objects hold.
func metaOf(v *object.View) objectMeta {
	return objectMeta{
		Name: v.Name(), GenerateName: v.GenerateName(), Namespace: v.Namespace(),
		Labels: v.LabelsOf(ownershipLabels...), Annotations: v.AnnotationsOf(ownershipAnnotations...),
	}
}

// managed reports whether the object carries Fleet's object-set label.
func (m objectMeta) managed() bool {
	_, ok := m.Labels[LabelHash]
	return ok
}

// appliedWithOwner reports whether the object set has an owning object,
// which Fleet's agent never sets on bundle content.
func (m objectMeta) appliedWithOwner() bool {
	_, ok := m.Annotations[AnnotationOwnerGVK]
	return ok
}

// ownershipKeys lists which of Fleet's two ownership keys the object has.
func (m objectMeta) ownershipKeys() []string {
	var keys []string
	if _, ok := m.Labels[LabelHash]; ok {
		keys = append(keys, "label "+LabelHash)
	}
	if _, ok := m.Annotations[AnnotationID]; ok {
		keys = append(keys, "annotation "+AnnotationID)
	}
	return keys
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
	var parts []string
	if bd := bundleDeployment(m.Annotations[AnnotationID]); bd != "" {
		parts = append(parts, "bundle deployment "+bd)
	}
	if rel := m.Annotations[AnnotationReleaseName]; rel != "" {
		if ns := m.Annotations[AnnotationReleaseNamespace]; ns != "" {
			rel = ns + "/" + rel
		}
		parts = append(parts, "Helm release "+rel)
	}
	if len(parts) == 0 {
		if h := m.Labels[LabelHash]; h != "" {
			return "object set " + h
		}
		return "owner not recorded"
	}
	return strings.Join(parts, ", ")
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
	c := gitops.Claim{Claims: m.managed() && !m.appliedWithOwner(), Keys: m.ownershipKeys(), Named: m.owner()}
	if m.managed() && m.appliedWithOwner() {
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
		FieldManagers: agentFieldManagers, IgnoreIn: "fleet.yaml (diff.comparePatches)"}}
}

// ref names a cached workload the way the guard's messages do.
func (m objectMeta) ref(gvk schema.GroupVersionKind) gitops.Ref {
	return gitops.Ref{GroupVersionKind: gvk, Namespace: m.Namespace, Name: m.Name}
}
