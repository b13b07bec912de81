package fleetguard

import (
	"context"
	"errors"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// CheckDrift is the audit check of changes made outside Git.
const CheckDrift = gitops.CheckDrift

// Audit reports Fleet-managed workloads in the metadata cache that a field
// manager other than the Fleet agent or Kubernetes' controllers changed
// after the agent's last write (rule.Auditor): the edits fleetguard
// refuses, made before Steward ran, while it was off or in audit mode, or
// by a break-glass user. It reads the summaries the cache transform kept
// (drift.go) and leaves out the fields configured as ignored. Workloads
// whose chart declares the replicas while an autoscaler scales them are
// reported too (gitops.AutoscalerFights), read through api.
func (r *Rule) Audit(ctx context.Context, api client.Reader) ([]rule.Finding, error) {
	if r.parents == nil {
		return nil, errors.New("the workload metadata cache is not set up")
	}
	resources := make([]string, 0, len(gitops.ScaledKinds()))
	for res := range gitops.ScaledKinds() {
		resources = append(resources, res)
	}
	sort.Strings(resources)
	var out []rule.Finding
	var declared []gitops.GitReplicas
	for _, res := range resources {
		gvk := gitops.ScaledKinds()[res]
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		// The cache's own objects, not copies: only the drift annotation
		// is read, and nothing is changed.
		if err := r.parents.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing %s from the workload metadata cache: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			if f, ok := r.driftFinding(gvk, &list.Items[i]); ok {
				out = append(out, f)
			}
			if d, ok := replicasOwned(gvk, &list.Items[i]); ok {
				declared = append(declared, d)
			}
		}
	}
	return r.guard.WithFights(ctx, api, out, declared)
}

// replicasOwned reports a cached workload whose chart declares its
// replicas, as the agent's own entry records it (trimWorkload's marker
// with no value): the autoscaler fight check's candidates.
func replicasOwned(gvk schema.GroupVersionKind, o *metav1.PartialObjectMetadata) (gitops.GitReplicas, bool) {
	meta := cachedMeta(o)
	if v, ok := meta.Annotations[cachedReplicasAnnotation]; !ok || v != "" || !meta.managed() {
		return gitops.GitReplicas{}, false
	}
	return gitops.GitReplicas{Ref: meta.ref(gvk), Owners: meta.owners()}, true
}

// driftFinding judges one cached workload.
func (r *Rule) driftFinding(gvk schema.GroupVersionKind, o *metav1.PartialObjectMetadata) (rule.Finding, bool) {
	meta := cachedMeta(o)
	s, ok := decodeDrift(meta.Annotations[driftAnnotation])
	if !ok {
		return rule.Finding{}, false
	}
	if !meta.managed() || meta.appliedWithOwner() {
		return rule.Finding{}, false
	}
	skip := r.guard.Skip(gvk.GroupKind())
	var fields []string
	for _, f := range s.Fields {
		p, err := object.ParsePointer(f)
		if err != nil || !gitops.Skipped(p, skip) {
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 && s.Unlisted == 0 {
		return rule.Finding{}, false // every change is to an ignored field
	}
	d := gitops.Drift{Managers: s.Managers, At: s.At, Fields: fields, Unlisted: s.Unlisted}
	return r.guard.DriftFinding(meta.ref(gvk), meta.owners(), d), true
}

var _ rule.Auditor = (*Rule)(nil)
