package fluxguard

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/rule"
)

// fluxKinds are Flux's own kinds, which Kustomizations apply (a cluster's
// Kustomization applying the apps' ones) and fluxguard may list.
var fluxKinds = []schema.GroupKind{
	{Group: kustomizations.Group, Kind: kindKustomization},
	{Group: helmReleases.Group, Kind: kindHelmRelease},
}

// Audit reports objects Flux applied that a field manager other than
// Flux's controllers or Kubernetes' changed after Flux last applied them
// (rule.Auditor): the edits fluxguard refuses, made before Steward ran,
// while it was off or in audit mode, or by a break-glass user.
//
// The cache holds the owners, not their objects, so the audit lists, once
// each, the kinds their inventories hold, through api (uncached), as
// metadata in pages, selected by Flux's name label; a HelmRelease without
// an inventory has its workloads listed. Only the workloads and Flux's own
// kinds are listed: what Steward is granted (gitops.AuditRBAC); a kind
// Steward may not list or that is not served is skipped. An object is
// judged as fluxguard judges an update: its owner's record must list it,
// opt-outs, server-managed fields, control writes, the owner's ignore
// rules and the configured ignoredFields are left out.
func (r *Rule) Audit(ctx context.Context, api client.Reader) ([]rule.Finding, error) {
	return r.guard.AuditCached(ctx, api, &r.resolver.Caches, "the Kustomizations' and HelmReleases'", r.resolver.auditLists, func(ref gitops.Ref, o *metav1.PartialObjectMetadata) ([]gitops.Owner, error) {
		v := gitops.MetaView(o)
		if claims(v).n == 0 {
			return nil, nil // a label without the other
		}
		return r.resolver.Owners(ctx, ref, v)
	})
}

// auditLists are the lists the audit makes: each kind an owner's
// inventory holds that fluxguard may list, with the label of the owner's
// kind; Kustomizations' first.
func (r resolver) auditLists() ([]gitops.KindList, error) {
	var out []gitops.KindList
	for _, c := range []struct {
		gr    schema.GroupResource
		label string
	}{{kustomizations, LabelKustomizationName}, {helmReleases, LabelHelmReleaseName}} {
		objs, err := r.Cache.List(c.gr)
		if err != nil {
			return nil, fmt.Errorf("listing Flux owners: %w", err)
		}
		var kinds []schema.GroupVersionKind
		for _, obj := range objs {
			o, ok := obj.(*owner)
			if !ok {
				continue
			}
			kinds = append(kinds, o.kinds...)
			if !o.hasInventory && o.kind == kindHelmRelease {
				// Its Helm release is its record (owner.lists); the
				// workloads are what the audit may list of it.
				for _, gvk := range gitops.ScaledKinds() {
					kinds = append(kinds, gvk)
				}
			}
		}
		out = append(out, gitops.KindLists(kinds, c.label, fluxKinds...)...)
	}
	return out, nil
}

var _ rule.Auditor = (*Rule)(nil)
