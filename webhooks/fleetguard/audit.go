package fleetguard

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// CheckDrift is the audit check of changes made outside Git.
const CheckDrift = "drift"

// Audit reports Fleet-managed workloads in the metadata cache that a field
// manager other than the Fleet agent or Kubernetes' controllers changed
// after the agent's last write (rule.Auditor): the edits fleetguard
// refuses, made before Steward ran, while it was off or in audit mode, or
// by a break-glass user. It reads the summaries the cache transform kept
// (drift.go) and leaves out the fields configured as ignored.
func (r *Rule) Audit(ctx context.Context, _ client.Reader) ([]rule.Finding, error) {
	if r.parents == nil {
		return nil, errors.New("the workload metadata cache is not set up")
	}
	resources := make([]string, 0, len(gitops.ScaledKinds))
	for res := range gitops.ScaledKinds {
		resources = append(resources, res)
	}
	sort.Strings(resources)
	var out []rule.Finding
	for _, res := range resources {
		gvk := gitops.ScaledKinds[res]
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
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Object, out[j].Object
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out, nil
}

// driftFinding judges one cached workload.
func (r *Rule) driftFinding(gvk schema.GroupVersionKind, o *metav1.PartialObjectMetadata) (rule.Finding, bool) {
	s, ok := decodeDrift(o.Annotations[driftAnnotation])
	if !ok {
		return rule.Finding{}, false
	}
	meta := cachedMeta(o)
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
	c := object.Changes{First: fields, Total: len(fields) + s.Unlisted}
	if len(c.First) > gitops.ListedPaths {
		c.First = c.First[:gitops.ListedPaths]
	}
	list := gitops.ChangeList(c)
	managers := strings.Join(s.Managers, ", ")
	return rule.Finding{
		Check:  CheckDrift,
		Result: rule.AuditFail,
		Object: corev1.ObjectReference{
			APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
			Namespace: o.Namespace, Name: o.Name,
		},
		Message: fmt.Sprintf("%s Changed since the Fleet agent last applied it, by %s: %s. Change it in the Git repository instead; "+
			"if the change is meant to stay, ignore the field in fleet.yaml (diff.comparePatches) and in fleetguard's ignoredFields.",
			r.guard.ManagedBy(meta.ref(gvk), meta.owners()), managers, list),
		Properties: map[string]string{
			"managers":  managers,
			"fields":    list,
			"changedAt": s.At.UTC().Format(time.RFC3339),
			"changes":   strconv.Itoa(c.Total),
		},
	}, true
}

var _ rule.Auditor = (*Rule)(nil)
