package argocdguard

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// applicationKind is Argo CD's own kind an Application may sync (an app
// of apps), which argocdguard may list.
var applicationKind = schema.GroupKind{Group: applications.Group, Kind: "Application"}

// Audit reports objects Argo CD synced that a field manager other than
// Argo CD's application controller or Kubernetes' changed after Argo CD
// last applied them (rule.Auditor): the edits argocdguard refuses, made
// before Steward ran, while it was off or in audit mode, by a break-glass
// user, or with self-heal off.
//
// The cache holds the Applications, not their objects, so the audit
// lists, once each, the kinds their status.resources hold, through api
// (uncached), as metadata in pages; Argo CD tracks objects by annotation,
// which no list selects on, so every object of a kind is listed. Only the
// workloads and Applications are listed: what Steward is granted
// (gitops.AuditRBAC); a kind Steward may not list or that is not served is
// skipped. An object is judged when its tracking id names it and an
// Application in the cache whose status.resources lists it, not for
// pruning; server-managed fields, control writes, the Application's
// ignoreDifferences (JSON pointers) and the configured ignoredFields are
// left out.
func (r *Rule) Audit(ctx context.Context, api client.Reader) ([]rule.Finding, error) {
	return r.guard.AuditCached(ctx, api, &r.resolver.Caches, "the Applications'", r.resolver.auditLists, func(ref gitops.Ref, o *metav1.PartialObjectMetadata) ([]gitops.Owner, error) {
		if len(o.Annotations) == 0 && r.resolver.trackingLabel == "" {
			return nil, nil // most objects of a kind: not Argo CD's
		}
		return r.resolver.listing(ref, gitops.MetaView(o))
	})
}

// auditLists are the lists the audit makes: each kind an Application's
// status.resources holds that argocdguard may list.
func (r resolver) auditLists() ([]gitops.KindList, error) {
	objs, err := r.Cache.List(applications)
	if err != nil {
		return nil, fmt.Errorf("listing Argo CD Applications: %w", err)
	}
	var kinds []schema.GroupVersionKind
	for _, obj := range objs {
		if a, ok := obj.(*application); ok {
			kinds = append(kinds, a.kinds...)
		}
	}
	return gitops.KindLists(kinds, "", applicationKind), nil
}

// listing returns the owner of an object the audit listed, as Owners
// does, but only when its Application's status.resources lists it: found
// by listing its kind, the object is Argo CD's only if its Application
// says so.
func (r resolver) listing(ref gitops.Ref, v *object.View) ([]gitops.Owner, error) {
	_, instance, _ := r.instance(ref, v)
	if instance == "" {
		return nil, nil
	}
	a, _, _, err := r.lookup(instance)
	if err != nil || a == nil || !a.resources.Lists(ref) {
		return nil, err
	}
	return []gitops.Owner{r.ownerFor(a, ref)}, nil
}

var _ rule.Auditor = (*Rule)(nil)
