package suspendnotice

import (
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// cachedFlux is what the cache keeps of one Flux object: its identity and,
// when it is suspended, the suspension record. A cluster holds thousands
// of Flux objects; a metav1.PartialObjectMetadata of the same fields takes
// about 300 bytes before its strings, and an annotations map about 300
// more, where this takes 64 and, when suspended, 48 more.
type cachedFlux struct {
	// namespace is interned: a few namespaces hold many objects.
	namespace       unique.Handle[string]
	name            string
	uid             types.UID
	resourceVersion string
	// suspension is nil unless the object carries the suspended-at
	// annotation.
	suspension *suspension
}

// suspension is the record Steward writes on a suspended object.
type suspension struct {
	at, by string
	// hasBy tells an empty suspended-by annotation from none, so the
	// annotations read back as the API server sent them.
	hasBy bool
}

// suspended reports whether the object carries the suspended-at annotation.
func (c *cachedFlux) suspended() bool { return c.suspension != nil }

// GetObjectKind and DeepCopyObject make cachedFlux a runtime.Object, which
// client-go's informers expect of what they store.
func (c *cachedFlux) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (c *cachedFlux) DeepCopyObject() runtime.Object {
	out := *c
	if c.suspension != nil {
		s := *c.suspension
		out.suspension = &s
	}
	return &out
}

// cachedFlux implements metav1.Object so client-go's informer store can
// key and track it (namespace, name, resourceVersion). Fields it does not
// keep read as empty, and setting them does nothing: cached objects are
// never written back.
var _ metav1.Object = (*cachedFlux)(nil)

func (c *cachedFlux) GetNamespace() string { return c.namespace.Value() }
func (c *cachedFlux) SetNamespace(namespace string) {
	c.namespace = unique.Make(namespace)
}
func (c *cachedFlux) GetName() string                       { return c.name }
func (c *cachedFlux) SetName(name string)                   { c.name = name }
func (c *cachedFlux) GetGenerateName() string               { return "" }
func (c *cachedFlux) SetGenerateName(string)                {}
func (c *cachedFlux) GetUID() types.UID                     { return c.uid }
func (c *cachedFlux) SetUID(uid types.UID)                  { c.uid = uid }
func (c *cachedFlux) GetResourceVersion() string            { return c.resourceVersion }
func (c *cachedFlux) SetResourceVersion(version string)     { c.resourceVersion = version }
func (c *cachedFlux) GetGeneration() int64                  { return 0 }
func (c *cachedFlux) SetGeneration(int64)                   {}
func (c *cachedFlux) GetSelfLink() string                   { return "" }
func (c *cachedFlux) SetSelfLink(string)                    {}
func (c *cachedFlux) GetCreationTimestamp() metav1.Time     { return metav1.Time{} }
func (c *cachedFlux) SetCreationTimestamp(metav1.Time)      {}
func (c *cachedFlux) GetDeletionTimestamp() *metav1.Time    { return nil }
func (c *cachedFlux) SetDeletionTimestamp(*metav1.Time)     {}
func (c *cachedFlux) GetDeletionGracePeriodSeconds() *int64 { return nil }
func (c *cachedFlux) SetDeletionGracePeriodSeconds(*int64)  {}
func (c *cachedFlux) GetLabels() map[string]string          { return nil }
func (c *cachedFlux) SetLabels(map[string]string)           {}
func (c *cachedFlux) GetFinalizers() []string               { return nil }
func (c *cachedFlux) SetFinalizers([]string)                {}
func (c *cachedFlux) GetOwnerReferences() []metav1.OwnerReference {
	return nil
}
func (c *cachedFlux) SetOwnerReferences([]metav1.OwnerReference)    {}
func (c *cachedFlux) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (c *cachedFlux) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

// GetAnnotations is the suspension record, the only annotations kept.
func (c *cachedFlux) GetAnnotations() map[string]string {
	if c.suspension == nil {
		return nil
	}
	a := map[string]string{AnnotationSuspendedAt: c.suspension.at}
	if c.suspension.hasBy {
		a[AnnotationSuspendedBy] = c.suspension.by
	}
	return a
}

// SetAnnotations keeps the suspension record of annotations.
func (c *cachedFlux) SetAnnotations(annotations map[string]string) {
	c.suspension = suspensionOf(annotations)
}

// suspensionOf reads the suspension record, nil without suspended-at.
func suspensionOf(annotations map[string]string) *suspension {
	at, ok := annotations[AnnotationSuspendedAt]
	if !ok {
		return nil
	}
	by, hasBy := annotations[AnnotationSuspendedBy]
	return &suspension{at: at, by: by, hasBy: hasBy}
}

// objectMeta is the cached object as the audit reads it.
func (c *cachedFlux) objectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: c.name, Namespace: c.GetNamespace(), UID: c.uid, ResourceVersion: c.resourceVersion, Annotations: c.GetAnnotations()}
}
