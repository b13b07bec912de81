// Package gitopstest fakes what the GitOps guards' audits read through
// the API: objects' metadata, listed in pages as the API server lists
// them, with kinds the reader may not list or that are not served, and
// the HorizontalPodAutoscalers and workloads' replicas of the check of
// fights with an autoscaler.
package gitopstest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// Reader is an API reader over objects' metadata, on controller-runtime's
// fake client. Unlike the fake client, it honours Limit and Continue; it
// answers Forbidden for the kinds in Forbidden and "no matches for kind"
// for those in NotServed, and records every list request.
type Reader struct {
	client.Reader
	Forbidden, NotServed []schema.GroupKind
	// MaxPage, when set, caps every page below the limit asked for, as
	// the API server may.
	MaxPage int
	// Autoscalers are the HorizontalPodAutoscalers the reader lists, in
	// one page; Replicas the workloads' spec.replicas that a Get of a
	// whole workload answers, by "namespace/name" (any other is not
	// found).
	Autoscalers []autoscalingv2.HorizontalPodAutoscaler
	Replicas    map[string]int64

	mu       sync.Mutex
	requests []string
}

// NewReader serves objs, whose managedFields it keeps.
func NewReader(objs ...*metav1.PartialObjectMetadata) *Reader {
	b := fake.NewClientBuilder().WithReturnManagedFields()
	for _, o := range objs {
		b = b.WithObjects(o.DeepCopy())
	}
	return &Reader{Reader: b.Build()}
}

// autoscalers is the kind of the HorizontalPodAutoscalers' lists.
var autoscalers = autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler")

// List lists one page of metadata, or every HorizontalPodAutoscaler.
func (r *Reader) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	if hpas, ok := l.(*autoscalingv2.HorizontalPodAutoscalerList); ok {
		if err := r.request(autoscalers, o); err != nil {
			return err
		}
		hpas.Items = slices.Clone(r.Autoscalers)
		return nil
	}
	list, ok := l.(*metav1.PartialObjectMetadataList)
	if !ok {
		return fmt.Errorf("the audit lists metadata or HorizontalPodAutoscalers only, not %T", l)
	}
	gvk := list.GroupVersionKind()
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	if err := r.request(gvk, o); err != nil {
		return err
	}
	all := &metav1.PartialObjectMetadataList{}
	all.SetGroupVersionKind(list.GroupVersionKind())
	var whole []client.ListOption
	if o.LabelSelector != nil {
		whole = append(whole, client.MatchingLabelsSelector{Selector: o.LabelSelector})
	}
	if o.Namespace != "" {
		whole = append(whole, client.InNamespace(o.Namespace))
	}
	if err := r.Reader.List(ctx, all, whole...); err != nil {
		return err
	}
	slices.SortFunc(all.Items, func(a, b metav1.PartialObjectMetadata) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	start := 0
	if o.Continue != "" {
		n, err := strconv.Atoi(o.Continue)
		if err != nil || n > len(all.Items) {
			return apierrors.NewBadRequest("invalid continue token " + o.Continue)
		}
		start = n
	}
	end := len(all.Items)
	if o.Limit > 0 && start+int(o.Limit) < end {
		end = start + int(o.Limit)
	}
	if r.MaxPage > 0 && start+r.MaxPage < end {
		end = start + r.MaxPage
	}
	list.Items = all.Items[start:end]
	list.Continue = ""
	if end < len(all.Items) {
		list.Continue = strconv.Itoa(end)
	}
	return nil
}

// request records a list request of gvk and answers it as the API server
// would for kinds the reader may not list or that are not served.
func (r *Reader) request(gvk schema.GroupVersionKind, o *client.ListOptions) error {
	r.mu.Lock()
	req := gvk.String()
	if o.LabelSelector != nil {
		req += " " + o.LabelSelector.String()
	}
	r.requests = append(r.requests, fmt.Sprintf("%s limit=%d continue=%q", req, o.Limit, o.Continue))
	r.mu.Unlock()
	switch {
	case slices.Contains(r.Forbidden, gvk.GroupKind()):
		return apierrors.NewForbidden(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind) + "s"}, "",
			fmt.Errorf("user %q cannot list resource", "system:serviceaccount:steward-system:steward"))
	case slices.Contains(r.NotServed, gvk.GroupKind()):
		return &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
	}
	return nil
}

// Get answers a whole workload with its Replicas; metadata from the
// objects served.
func (r *Reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return r.Reader.Get(ctx, key, obj, opts...)
	}
	n, ok := r.Replicas[key.String()]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: u.GroupVersionKind().Group, Resource: strings.ToLower(u.GetKind()) + "s"}, key.Name)
	}
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	return unstructured.SetNestedField(u.Object, n, "spec", "replicas")
}

// Requests are the list requests made, in order: "<gvk> [<label
// selector>] limit=<n> continue=<token>".
func (r *Reader) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

// Object is an object's metadata as a list returns it; managedFields
// entries without an apiVersion are recorded at gvk's.
func Object(gvk schema.GroupVersionKind, namespace, name string, labels, annotations map[string]string, managedFields ...metav1.ManagedFieldsEntry) *metav1.PartialObjectMetadata {
	managedFields = slices.Clone(managedFields)
	for i := range managedFields {
		if managedFields[i].APIVersion == "" {
			managedFields[i].APIVersion = gvk.GroupVersion().String()
		}
	}
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name, Labels: labels, Annotations: annotations, ManagedFields: managedFields,
	}}
	o.SetGroupVersionKind(gvk)
	return o
}

// Entry is one managedFields entry as the API server records it: the
// manager owns the fields at paths (each a list of fieldsV1 keys, such as
// "f:spec", "f:replicas") since at.
func Entry(manager string, at time.Time, paths ...[]string) metav1.ManagedFieldsEntry {
	tree := map[string]any{}
	for _, p := range paths {
		node := tree
		for _, k := range p {
			next, ok := node[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				node[k] = next
			}
			node = next
		}
	}
	t := metav1.NewTime(at)
	e := metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &t, FieldsType: "FieldsV1"}
	raw, err := json.Marshal(tree)
	if err != nil {
		panic(err)
	}
	e.FieldsV1 = metav1.NewFieldsV1(string(raw))
	return e
}
