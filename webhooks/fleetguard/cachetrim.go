package fleetguard

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// readAnnotations are the only annotations a scale decision reads from the
// workload metadata cache (objectMeta's methods and the denial message);
// of the labels it reads only LabelHash.
var readAnnotations = []string{AnnotationID, AnnotationOwnerGVK, AnnotationReleaseName, AnnotationReleaseNamespace}

// cachedTypes are the TypeMetas of the cached kinds, shared by every cached
// object instead of each keeping the strings it was decoded with.
var cachedTypes = func() map[metav1.TypeMeta]metav1.TypeMeta {
	m := map[metav1.TypeMeta]metav1.TypeMeta{}
	for _, gvk := range scaledKinds {
		t := metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
		m[t] = t
	}
	return m
}()

// trimWorkload keeps of a cached workload's metadata only what a scale
// decision reads. The API server's copy carries managedFields (one entry
// per field manager, with its whole fieldsV1 tree) and wrangler's
// objectset.rio.cattle.io/applied annotation (a compressed copy of the
// whole object): together most of its size. Of managedFields only the
// audit's drift summary is kept, for drifted workloads (drift.go). It
// accepts its own output, as informer transforms must.
func trimWorkload(obj any) (any, error) {
	in, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	typ, ok := cachedTypes[in.TypeMeta]
	if !ok {
		typ = in.TypeMeta
	}
	out := &metav1.PartialObjectMetadata{TypeMeta: typ, ObjectMeta: metav1.ObjectMeta{
		Name:            in.Name,
		Namespace:       in.Namespace,
		ResourceVersion: in.ResourceVersion,
	}}
	if hash, ok := in.Labels[LabelHash]; ok {
		out.Labels = map[string]string{LabelHash: hash}
	}
	for _, k := range readAnnotations {
		if v, ok := in.Annotations[k]; ok {
			setAnnotation(out, k, v)
		}
	}
	// The audit's drift check reads managedFields, which are dropped here:
	// a drifted workload keeps their summary instead (drift.go), the rest
	// nothing. An object without managedFields is this function's own
	// output, whose summary stays.
	if s, ok := driftOf(in.ManagedFields); ok {
		setAnnotation(out, driftAnnotation, s.encode())
	} else if v, ok := in.Annotations[driftAnnotation]; ok && len(in.ManagedFields) == 0 {
		setAnnotation(out, driftAnnotation, v)
	}
	return out, nil
}

func setAnnotation(o *metav1.PartialObjectMetadata, k, v string) {
	if o.Annotations == nil {
		o.Annotations = make(map[string]string, len(readAnnotations))
	}
	o.Annotations[k] = v
}
