package claimguard

import (
	"math"
	"strings"
	"time"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
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
// managed resource: only the fields its checks read. Informers hold
// hundreds of thousands of these, most of them live managed resources, so
// it carries no labels, annotations or managed fields, keeps its strings in
// one allocation, and fits a 64-byte allocation; what only composites and
// deleting objects need hangs off more.
type object struct {
	// id is the object's namespace and name as one string, the cache key
	// ("namespace/name", or the name of a cluster-scoped object: see
	// newID), followed by its resource version (rvLen bytes) and its
	// crossplane.io/external-name annotation (extLen bytes, or none when
	// it is extSameAsName): one string for what every managed resource
	// has.
	id            string
	rvLen, extLen uint32
	deletion      *metav1.Time
	finalizers    finalizerList
	// owner is the controller owner reference as "group/Kind/name": the
	// composite resource that composed this object.
	owner string
	// more is set for composite resources, and for managed resources only
	// while they are being deleted: nothing reads a live managed
	// resource's claim.
	more *objectMore
}

// objectMore is the part of an object that most cached objects lack.
type objectMore struct {
	// claim is "namespace/name" of the claim the object belongs to, from
	// Crossplane's claim labels or a v1 XR's spec.claimRef.
	claim string
	// refs are a composite resource's spec.resourceRefs (v1) or
	// spec.crossplane.resourceRefs (v2), sized exactly.
	refs []ref
}

// claim is "namespace/name" of the object's claim, or "".
func (o *object) claim() string {
	if o.more == nil {
		return ""
	}
	return o.more.claim
}

// refs are a composite resource's resource references.
func (o *object) refs() []ref {
	if o.more == nil {
		return nil
	}
	return o.more.refs
}

// setClaim sets the object's claim.
func (o *object) setClaim(claim string) {
	if o.more == nil {
		if claim == "" {
			return
		}
		o.more = &objectMore{}
	}
	o.more.claim = claim
}

// dropRefsTo drops the references to the given kinds, keeping the rest in
// an exactly sized list. It changes o: call it before o is stored.
func (o *object) dropRefsTo(kinds map[schema.GroupKind]bool) {
	refs := o.refs()
	n := 0
	for _, r := range refs {
		if !kinds[r.groupKind()] {
			n++
		}
	}
	if n == len(refs) {
		return
	}
	var kept []ref
	if n > 0 {
		kept = make([]ref, 0, n)
		for _, r := range refs {
			if !kinds[r.groupKind()] {
				kept = append(kept, r)
			}
		}
	}
	o.more.refs = kept
}

// setRefs sets a composite resource's resource references.
func (o *object) setRefs(refs []ref) {
	if o.more == nil {
		if refs == nil {
			return
		}
		o.more = &objectMore{}
	}
	o.more.refs = refs
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
func newID(namespace, name string) string { return joinID(namespace, name, "", "") }

// joinID is newID followed by a resource version and an external name,
// built in one allocation.
func joinID(namespace, name, rv, ext string) string {
	var b strings.Builder
	b.Grow(len(namespace) + 2 + len(name) + len(rv) + len(ext))
	switch {
	case namespace == "" && strings.Contains(name, "/"):
		b.WriteByte('/')
	case namespace != "":
		b.WriteString(namespace)
		b.WriteByte('/')
	}
	b.WriteString(name)
	b.WriteString(rv)
	b.WriteString(ext)
	return b.String()
}

// extSameAsName is the extLen of an object whose external name is its
// name, as many providers name what they create: the id then holds it once.
const extSameAsName = math.MaxUint32

// storedExtLen is how many bytes of the id the external name takes.
func (o *object) storedExtLen() int {
	if o.extLen == extSameAsName {
		return 0
	}
	return int(o.extLen)
}

// ident is the object's namespace and name as newID joins them.
func (o *object) ident() string { return o.id[:len(o.id)-int(o.rvLen)-o.storedExtLen()] }

// resourceVersion is the object's resource version, for client-go.
func (o *object) resourceVersion() string {
	end := len(o.id) - o.storedExtLen()
	return o.id[end-int(o.rvLen) : end]
}

// externalName is the crossplane.io/external-name annotation.
func (o *object) externalName() string {
	if o.extLen == extSameAsName {
		return o.name()
	}
	return o.id[len(o.id)-int(o.extLen):]
}

// setID sets the object's namespace, name, resource version and external
// name.
func (o *object) setID(namespace, name, rv, ext string) {
	o.rvLen, o.extLen = uint32(len(rv)), uint32(len(ext))
	if ext != "" && ext == name {
		o.extLen, ext = extSameAsName, ""
	}
	o.id = joinID(namespace, name, rv, ext)
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

// keyOf is the informers' key function. An object's key is a part of its
// id, so the store's map shares the id's bytes instead of holding a key
// built for each object.
func keyOf(obj any) (string, error) {
	switch o := obj.(type) {
	case *object:
		return o.key(), nil
	case cache.DeletedFinalStateUnknown:
		return o.Key, nil
	}
	return cache.MetaNamespaceKeyFunc(obj)
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

// asClaim is claimKey(o.namespace(), o.name()) without building it again.
func (o *object) asClaim() string {
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
	if o.more != nil {
		c.more = &objectMore{claim: o.more.claim, refs: append([]ref(nil), o.more.refs...)}
	}
	if o.deletion != nil {
		t := *o.deletion
		c.deletion = &t
	}
	return &c
}
