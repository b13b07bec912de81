// Package fleetguard refuses manual changes to objects deployed by Fleet.
// A hand edit or delete of a GitOps-managed object silently diverges from
// Git until Fleet reverts it, and Fleet's status keeps reporting the bundle
// as ready meanwhile; fleetguard refuses the write instead and says where
// to make the change.
package fleetguard

import (
	"context"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Rule is the fleetguard admission handler.
type Rule struct {
	agentUsers  []string
	agentGroups []string
	// skip holds, per group and kind, the paths an update may change: the
	// server-managed ones plus the configured ignored fields.
	skip map[schema.GroupKind][]object.Pointer
	msg  messages
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
	r := &Rule{
		agentUsers:    c.AgentUsers,
		agentGroups:   c.AgentGroups,
		skip:          map[schema.GroupKind][]object.Pointer{},
		msg:           messages{breakGlass: breakGlassGroup},
		lookupTimeout: time.Second,
	}
	for _, f := range c.IgnoredFields {
		gk := schema.GroupKind{Group: f.Group, Kind: f.Kind}
		if r.skip[gk] == nil {
			r.skip[gk] = append([]object.Pointer(nil), serverManaged...)
		}
		for _, s := range f.Paths {
			if p, err := object.ParsePointer(s); err == nil && len(p) > 0 {
				r.skip[gk] = append(r.skip[gk], p)
			}
		}
	}
	return r
}

// skipFor returns the paths an update of the given kind may change.
func (r *Rule) skipFor(gk schema.GroupKind) []object.Pointer {
	if s, ok := r.skip[gk]; ok {
		return s
	}
	return serverManaged
}

// Handle decides one admission request as if the rule were enforced.
func (r *Rule) Handle(ctx context.Context, req *rule.Request) admission.Response {
	switch req.SubResource {
	case "scale":
		return r.handleScale(ctx, req)
	case "", "status", "ephemeralcontainers", "resize":
		// A write through a subresource stores the whole object it
		// carries, less what the subresource's strategy resets, so it is
		// judged as an update of that object: a status write may not
		// strip Fleet's keys, add an owner or change labels any more than
		// an edit may.
	default:
		// The webhooks ask for no other subresource.
		return admission.Allowed("")
	}
	if who, ok := r.trusted(req.UserInfo); ok {
		return admission.Allowed("written by " + who)
	}
	switch req.Operation {
	case admissionv1.Create:
		return r.create(req)
	case admissionv1.Update:
		return r.update(req)
	case admissionv1.Delete:
		return r.delete(req)
	}
	return admission.Allowed("")
}

func (r *Rule) create(req *rule.Request) admission.Response {
	m, err := strictMeta(req.View())
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("create: %w", err))
	}
	switch {
	case !m.managed():
		return admission.Allowed("")
	case m.appliedWithOwner():
		return admission.Allowed(appliedWithOwnerReason)
	}
	return admission.Denied(r.msg.spoofing(subject(req.Kind.Kind, req.Namespace, m), "carries", m))
}

func (r *Rule) update(req *rule.Request) admission.Response {
	oldView, curView := req.OldView(), req.View()
	if err := oldView.Err(); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("update, old object: %w", err))
	}
	if err := curView.Err(); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("update, new object: %w", err))
	}
	old, cur := metaOf(oldView), metaOf(curView)
	guardedOld := old.managed() && !old.appliedWithOwner()
	guardedNew := cur.managed() && !cur.appliedWithOwner()
	switch {
	case !guardedOld && guardedNew:
		return admission.Denied(r.msg.spoofing(subject(req.Kind.Kind, req.Namespace, cur), "would gain", cur))
	case !guardedOld && old.managed():
		return admission.Allowed(appliedWithOwnerReason)
	case !guardedOld:
		return admission.Allowed("")
	}
	subj := subject(req.Kind.Kind, req.Namespace, old)
	if keys := strippedKeys(old, cur); len(keys) > 0 {
		return admission.Denied(r.msg.stripping(subj, old, keys))
	}
	if added := addedOwners(oldView, curView); len(added) > 0 {
		return admission.Denied(r.msg.addingOwners(subj, old, added))
	}
	gk := schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}
	if c := object.Diff(oldView, curView, r.skipFor(gk), listedPaths); c.Total > 0 {
		return admission.Denied(r.msg.changed(subj, old, c))
	}
	return admission.Allowed("no change to fields Fleet deploys (status, metadata bookkeeping and ignored fields are not guarded)")
}

func (r *Rule) delete(req *rule.Request) admission.Response {
	if !req.OldView().Present() {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("delete: the request carries no oldObject, so the object's owner cannot be checked"))
	}
	m, err := strictMeta(req.OldView())
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("delete: %w", err))
	}
	switch {
	case !m.managed():
		return admission.Allowed("")
	case m.appliedWithOwner():
		return admission.Allowed(appliedWithOwnerReason)
	}
	return admission.Denied(r.msg.deleting(subject(req.Kind.Kind, req.Namespace, m), m))
}

const appliedWithOwnerReason = "object set has an owner (" + AnnotationOwnerGVK + "): applied by a controller, not deployed from a Fleet bundle"
