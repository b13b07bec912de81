package claimguard

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// object implements metav1.Object so client-go's informer store can key and
// track it (name, namespace, resourceVersion). Fields claimguard does not
// keep read as empty; setters of those fields do nothing, because cached
// objects are never written back.
var _ metav1.Object = (*object)(nil)

func (o *object) GetNamespace() string { return o.namespace() }
func (o *object) SetNamespace(namespace string) {
	o.setID(namespace, o.name(), o.resourceVersion(), o.externalName())
}
func (o *object) GetName() string { return o.name() }
func (o *object) SetName(name string) {
	o.setID(o.namespace(), name, o.resourceVersion(), o.externalName())
}
func (o *object) GetGenerateName() string    { return "" }
func (o *object) SetGenerateName(string)     {}
func (o *object) GetUID() types.UID          { return "" }
func (o *object) SetUID(types.UID)           {}
func (o *object) GetResourceVersion() string { return o.resourceVersion() }
func (o *object) SetResourceVersion(version string) {
	o.setID(o.namespace(), o.name(), version, o.externalName())
}
func (o *object) GetGeneration() int64                  { return 0 }
func (o *object) SetGeneration(int64)                   {}
func (o *object) GetSelfLink() string                   { return "" }
func (o *object) SetSelfLink(string)                    {}
func (o *object) GetCreationTimestamp() metav1.Time     { return metav1.Time{} }
func (o *object) SetCreationTimestamp(metav1.Time)      {}
func (o *object) GetDeletionTimestamp() *metav1.Time    { return o.deletion }
func (o *object) SetDeletionTimestamp(t *metav1.Time)   { o.deletion = t }
func (o *object) GetDeletionGracePeriodSeconds() *int64 { return nil }
func (o *object) SetDeletionGracePeriodSeconds(*int64)  {}
func (o *object) GetLabels() map[string]string          { return nil }
func (o *object) SetLabels(map[string]string)           {}
func (o *object) GetAnnotations() map[string]string     { return nil }
func (o *object) SetAnnotations(map[string]string)      {}
func (o *object) GetFinalizers() []string               { return o.finalizers.list() }
func (o *object) SetFinalizers(finalizers []string)     { o.finalizers = internFinalizers(finalizers) }
func (o *object) GetOwnerReferences() []metav1.OwnerReference {
	return nil
}
func (o *object) SetOwnerReferences([]metav1.OwnerReference)    {}
func (o *object) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (o *object) SetManagedFields([]metav1.ManagedFieldsEntry)  {}
