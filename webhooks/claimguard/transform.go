package claimguard

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// transform is the informers' TransformFunc: it replaces each listed or
// watched object by its small cached form before the store keeps it, so
// neither spec nor status nor managed fields stay in memory. It accepts an
// already transformed object, because client-go may pass one again.
func transform(in any) (any, error) {
	switch o := in.(type) {
	case *object:
		return o, nil
	case *metav1.PartialObjectMetadata:
		return fromMeta(&o.ObjectMeta, nil), nil
	case *unstructured.Unstructured:
		return fromUnstructured(o), nil
	}
	return nil, fmt.Errorf("claimguard cache: unexpected object type %T", in)
}

// fromMeta builds the cached form from an object's metadata; spec, when
// not nil, is the object's spec (composite resources only).
func fromMeta(m metav1.Object, spec map[string]any) *object {
	o := &object{
		deletion:   m.GetDeletionTimestamp(),
		finalizers: internFinalizers(m.GetFinalizers()),
		owner:      controllerOwner(m.GetOwnerReferences()),
	}
	o.setID(m.GetNamespace(), m.GetName(), m.GetResourceVersion(), m.GetAnnotations()[annotationExtName])
	if spec == nil && !o.deleting() {
		// A live managed resource: nothing reads its claim (see claimOf).
		return o
	}
	labels := m.GetLabels()
	claim := claimKey(labels[labelClaimNamespace], labels[labelClaimName])
	if claim == "" && spec != nil {
		claim = claimKey(str(spec, "claimRef", "namespace"), str(spec, "claimRef", "name"))
	}
	o.setClaim(claim)
	if spec != nil {
		o.setRefs(refsOf(spec, o.namespace()))
	}
	return o
}

// fromUnstructured builds the cached form of a composite resource.
func fromUnstructured(u *unstructured.Unstructured) *object {
	spec, _ := u.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	return fromMeta(u, spec)
}

// controllerOwner returns "group/Kind/name" of the controller owner
// reference, which Crossplane sets on every composed resource.
func controllerOwner(refs []metav1.OwnerReference) string {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			gv, err := schema.ParseGroupVersion(r.APIVersion)
			if err != nil {
				return ""
			}
			return ownerKey(schema.GroupKind{Group: gv.Group, Kind: r.Kind}, r.Name)
		}
	}
	return ""
}

// refsOf reads spec.resourceRefs (v1 XRs) and spec.crossplane.resourceRefs
// (v2 XRs). A reference without a namespace to a namespaced kind is in the
// composite's own namespace, which is how Crossplane v2 writes them.
func refsOf(spec map[string]any, namespace string) []ref {
	list, _ := spec["resourceRefs"].([]any)
	if cp, ok := spec["crossplane"].(map[string]any); ok {
		if l, ok := cp["resourceRefs"].([]any); ok {
			list = append(append([]any(nil), list...), l...)
		}
	}
	if len(list) == 0 {
		return nil
	}
	out := make([]ref, 0, len(list))
	for _, item := range list {
		if r, ok := refOf(item, namespace); ok {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil
	}
	// Exactly sized: the cache keeps it as long as the composite.
	return append(make([]ref, 0, len(out)), out...)
}

// refOf reads one resource reference.
func refOf(item any, namespace string) (ref, bool) {
	m, ok := item.(map[string]any)
	if !ok {
		return ref{}, false
	}
	name, _ := m["name"].(string)
	kind, _ := m["kind"].(string)
	apiVersion, _ := m["apiVersion"].(string)
	if name == "" || kind == "" {
		return ref{}, false
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return ref{}, false
	}
	ns, _ := m["namespace"].(string)
	if ns == "" {
		ns = namespace
	}
	return newRef(gv.Group, kind, ns, name), true
}

// str reads a nested string field, or "" when any step is missing or of
// another type.
func str(m map[string]any, path ...string) string {
	for i, p := range path {
		v, ok := m[p]
		if !ok {
			return ""
		}
		if i == len(path)-1 {
			s, _ := v.(string)
			return s
		}
		if m, ok = v.(map[string]any); !ok {
			return ""
		}
	}
	return ""
}
