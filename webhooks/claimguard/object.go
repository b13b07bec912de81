package claimguard

import (
	"strings"
	"time"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Crossplane's own label and annotation keys.
const (
	labelClaimName      = "crossplane.io/claim-name"
	labelClaimNamespace = "crossplane.io/claim-namespace"
	labelComposite      = "crossplane.io/composite"
	annotationExtName   = "crossplane.io/external-name"
	foregroundFinalizer = metav1.FinalizerDeleteDependents
)

// object is what claimguard keeps in its caches for one composite or
// managed resource: only the fields its checks read. Informers hold tens of
// thousands of these, so it carries no labels, annotations or managed
// fields, and it is smaller than a metav1.ObjectMeta.
type object struct {
	// id is the object's namespace and name as one string, the cache key
	// ("namespace/name", or the name of a cluster-scoped object: see
	// newID), followed by its resource version, the last rvLen bytes: one
	// string for what every object has.
	id         string
	rvLen      uint32
	deletion   *metav1.Time
	finalizers finalizerList
	// externalName is the crossplane.io/external-name annotation.
	externalName string
	// owner is the controller owner reference as "group/Kind/name": the
	// composite resource that composed this object.
	owner string
	// claim is "namespace/name" of the claim the object belongs to, from
	// Crossplane's claim labels or a v1 XR's spec.claimRef.
	claim string
	// refs are a composite resource's spec.resourceRefs (v1) or
	// spec.crossplane.resourceRefs (v2), sized exactly.
	refs []ref
}

// ref is one entry of a composite resource's resource references. Group,
// kind and namespace repeat across thousands of composite resources, so
// each is one shared copy.
type ref struct {
	gk        unique.Handle[schema.GroupKind]
	namespace unique.Handle[string]
	name      string
}

func newRef(group, kind, namespace, name string) ref {
	return ref{gk: unique.Make(schema.GroupKind{Group: group, Kind: kind}), namespace: unique.Make(namespace), name: name}
}

func (r ref) groupKind() schema.GroupKind { return r.gk.Value() }

// Equal compares references; cmp uses it.
func (r ref) Equal(o ref) bool { return r == o }

// finalizerList is an object's finalizers, interned: the few lists that
// occur are stored once, as messages print them. The zero value is no
// finalizers.
type finalizerList struct{ joined unique.Handle[string] }

func internFinalizers(in []string) finalizerList {
	if len(in) == 0 {
		return finalizerList{}
	}
	return finalizerList{joined: unique.Make(strings.Join(in, ", "))}
}

// any reports whether the list has a finalizer.
func (f finalizerList) any() bool { return f != finalizerList{} }

// String is the finalizers, separated by ", ".
func (f finalizerList) String() string {
	if !f.any() {
		return ""
	}
	return f.joined.Value()
}

// list splits the finalizers again, for metav1.Object.
func (f finalizerList) list() []string {
	if !f.any() {
		return nil
	}
	return strings.Split(f.joined.Value(), ", ")
}

// Equal compares lists; cmp uses it.
func (f finalizerList) Equal(g finalizerList) bool { return f == g }

// deleting reports whether the object is being deleted.
func (o *object) deleting() bool { return o.deletion != nil }

// deletingFor is how long the object has been deleting at now.
func (o *object) deletingFor(now time.Time) time.Duration {
	if o.deletion == nil {
		return 0
	}
	return now.Sub(o.deletion.Time).Round(time.Second)
}

// newID joins a namespace and a name into an object's id. Neither may
// contain "/" in Kubernetes (a request's namespace is a segment of its
// URL); a cluster-scoped name that does (a request body the API server
// has not validated) is stored after a "/", so that name and namespace
// still read back as given.
func newID(namespace, name string) string { return newIDWithRV(namespace, name, "") }

// newIDWithRV is newID followed by a resource version, built at once.
func newIDWithRV(namespace, name, rv string) string {
	switch {
	case namespace == "" && strings.Contains(name, "/"):
		return "/" + name + rv
	case namespace == "":
		return name + rv
	}
	return namespace + "/" + name + rv
}

// ident is the object's namespace and name as newID joins them.
func (o *object) ident() string { return o.id[:len(o.id)-int(o.rvLen)] }

// resourceVersion is the object's resource version, for client-go.
func (o *object) resourceVersion() string { return o.id[len(o.id)-int(o.rvLen):] }

// setID sets the object's namespace, name and resource version.
func (o *object) setID(namespace, name, rv string) {
	o.id, o.rvLen = newIDWithRV(namespace, name, rv), uint32(len(rv))
}

// name is the object's name.
func (o *object) name() string {
	id := o.ident()
	if i := strings.IndexByte(id, '/'); i >= 0 {
		return id[i+1:]
	}
	return id
}

// namespace is the object's namespace, empty when cluster-scoped.
func (o *object) namespace() string {
	id := o.ident()
	if i := strings.IndexByte(id, '/'); i >= 0 {
		return id[:i]
	}
	return ""
}

// key is the object's cache key, as client-go's MetaNamespaceKeyFunc makes it.
func (o *object) key() string {
	id := o.ident()
	if strings.HasPrefix(id, "/") {
		return id[1:]
	}
	return id
}

func cacheKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// ownerKey names a controller owner for the owner index.
func ownerKey(gk schema.GroupKind, name string) string {
	return gk.Group + "/" + gk.Kind + "/" + name
}

// claimKey is claimKey(o.namespace(), o.name()) without building it again.
func (o *object) claimKey() string {
	if o.namespace() == "" || o.name() == "" {
		return ""
	}
	return o.ident()
}

// claimKey names a claim for the claim index; empty unless both parts are set.
func claimKey(namespace, name string) string {
	if namespace == "" || name == "" {
		return ""
	}
	return namespace + "/" + name
}

// GetObjectKind and DeepCopyObject make object a runtime.Object, which some
// client-go paths expect of what an informer stores.
func (o *object) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (o *object) DeepCopyObject() runtime.Object {
	c := *o
	c.refs = append([]ref(nil), o.refs...)
	if o.deletion != nil {
		t := *o.deletion
		c.deletion = &t
	}
	return &c
}
