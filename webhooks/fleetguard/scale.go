package fleetguard

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/rule"
)

// SetupWithManager starts metadata-only informers for the scalable
// workloads before the manager starts, so they sync before Steward reports
// ready; scale requests read their parent's labels from them. They are in
// the manager's cache, not the cluster cache: built-in kinds, always served
// at apps/v1 and v1, narrowed by the label selector of CacheByObject.
func (r *Rule) SetupWithManager(mgr manager.Manager, _ *clustercache.Cache) error {
	for _, gvk := range gitops.ScaledKinds() {
		if _, err := mgr.GetCache().GetInformer(context.Background(), partialObject(gvk)); err != nil {
			return fmt.Errorf("fleetguard: starting the %s metadata informer: %w", gvk.Kind, err)
		}
	}
	r.parents = mgr.GetCache()
	return nil
}

var _ clustercache.ManagerSetup = (*Rule)(nil)

// CacheByObject narrows the workload metadata informers to objects with
// Fleet's hash label: only those can make a scale request fleetguard's
// business, and without the selector every Deployment, StatefulSet and
// ReplicaSet written in the cluster (the deployment controller writes
// ReplicaSets on every rollout) would reach Steward as a watch event and
// stay in its memory. Of those it keeps, trimWorkload keeps only what a
// scale decision reads.
func (r *Rule) CacheByObject() map[client.Object]cache.ByObject {
	out := map[client.Object]cache.ByObject{}
	for _, gvk := range gitops.ScaledKinds() {
		out[partialObject(gvk)] = cache.ByObject{Label: fleetManaged, Transform: trimWorkload}
	}
	return out
}

var _ rule.CacheScope = (*Rule)(nil)

// fleetManaged selects objects that carry Fleet's hash label.
var fleetManaged = func() labels.Selector {
	managed, err := labels.NewRequirement(LabelHash, selection.Exists, nil)
	if err != nil {
		panic(err) // LabelHash is a constant, valid label key
	}
	return labels.NewSelector().Add(*managed)
}()

// scaleRBAC is what the metadata informers need, and what the audit's
// check of fights with an autoscaler reads (gitops.AutoscalerFights):
// get of a workload's replicas and list of the autoscalers.
func scaleRBAC() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{
		APIGroups: []string{"apps"},
		Resources: []string{"deployments", "statefulsets", "replicasets"},
		Verbs:     []string{"get", "list", "watch"},
	}, {
		APIGroups: []string{""},
		Resources: []string{"replicationcontrollers"},
		Verbs:     []string{"get", "list", "watch"},
	}, gitops.AutoscalerRBAC()}
}

// WithParents sets the reader scale requests look workloads up in; tests
// and offline use pass their own.
func (r *Rule) WithParents(c client.Reader) *Rule {
	r.parents = c
	return r
}

func partialObject(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(gvk)
	return o
}

// OwnersOf finds a workload's Fleet owner in the metadata cache, for a
// scale request: a Scale carries no labels.
func (r resolver) OwnersOf(ctx context.Context, ref gitops.Ref) ([]gitops.Owner, error) {
	parent, err := r.rule.lookupParent(ctx, ref.GroupVersionKind, ref.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	switch {
	case !parent.managed():
		return nil, nil
	case parent.appliedWithOwner():
		return []gitops.Owner{{Why: appliedWithOwnerReason}}, nil
	}
	return parent.owners(), nil
}

// lookupParent reads a workload's metadata from the cache. A missing cache
// or one not synced yet is an error: the webhook's failure policy decides
// what happens then. The cache holds only workloads with Fleet's hash label
// (CacheByObject), so one not in it is not Fleet-managed.
func (r *Rule) lookupParent(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (objectMeta, error) {
	if r.parents == nil {
		return objectMeta{}, fmt.Errorf("the workload metadata cache is not set up, so the owner of %s %s/%s cannot be checked", gvk.Kind, namespace, name)
	}
	ctx, cancel := context.WithTimeout(ctx, r.lookupTimeout)
	defer cancel()
	obj := partialObject(gvk)
	if err := r.parents.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return objectMeta{Name: name, Namespace: namespace}, nil
		}
		return objectMeta{}, fmt.Errorf("reading %s %s/%s from the workload metadata cache: %w", gvk.Kind, namespace, name, err)
	}
	return cachedMeta(obj), nil
}

// Inherit makes r read workloads' metadata from the cache running was set
// up with; everything else is r's own settings.
func (r *Rule) Inherit(running rule.Rule) error {
	return gitops.Inherit(Name, running, func(old *Rule) { r.parents = old.parents })
}

var _ rule.Inheritor = (*Rule)(nil)

// ReplicasDeclared reads from the metadata cache whether the chart
// declares a workload's replicas (trimWorkload's marker).
func (r resolver) ReplicasDeclared(ctx context.Context, ref gitops.Ref, _ []gitops.Owner) (bool, string, error) {
	parent, err := r.rule.lookupParent(ctx, ref.GroupVersionKind, ref.Namespace, ref.Name)
	if err != nil {
		return false, "", err
	}
	unrecorded, declared := parent.Annotations[cachedReplicasAnnotation]
	return declared, unrecorded, nil
}
