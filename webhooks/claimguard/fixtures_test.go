package claimguard

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// now is the tests' clock.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// The kinds of the tests: the sandbox's XRD (v1, with a claim), a v2
// namespaced XRD without claims, and managed resources.
var (
	pgXRD = &xrd{
		name: "xpostgresqlinstances.database.example.org", group: "database.example.org",
		compositeKind: "XPostgreSQLInstance", compositePlural: "xpostgresqlinstances",
		claimKind: "PostgreSQLInstance", claimPlural: "postgresqlinstances",
		referenceable: "v1alpha1", defaultCompositeDeletePolicy: "Background",
	}
	appXRD = &xrd{
		name: "xapps.platform.example.org", group: "platform.example.org",
		compositeKind: "XApp", compositePlural: "xapps",
		referenceable: "v1", defaultCompositeDeletePolicy: "Background",
	}
	// bucketXRD has a claim whose XR kind is also composed by nothing.
	bucketXRD = &xrd{
		name: "xbuckets.storage.example.org", group: "storage.example.org",
		compositeKind: "XBucket", compositePlural: "xbuckets",
		claimKind: "Bucket", claimPlural: "buckets",
		referenceable: "v1", defaultCompositeDeletePolicy: "Foreground",
	}

	pgXRGVR    = schema.GroupVersionResource{Group: "database.example.org", Version: "v1alpha1", Resource: "xpostgresqlinstances"}
	pgClaimGVR = schema.GroupVersionResource{Group: "database.example.org", Version: "v1alpha1", Resource: "postgresqlinstances"}
	appGVR     = schema.GroupVersionResource{Group: "platform.example.org", Version: "v1", Resource: "xapps"}
	bucketGVR  = schema.GroupVersionResource{Group: "storage.example.org", Version: "v1", Resource: "buckets"}
	xbucketGVR = schema.GroupVersionResource{Group: "storage.example.org", Version: "v1", Resource: "xbuckets"}
	rdsGVR     = schema.GroupVersionResource{Group: "database.aws.example.org", Version: "v1beta1", Resource: "rdsinstances"}
	rdsGK      = schema.GroupKind{Group: "database.aws.example.org", Kind: "RDSInstance"}
	userGVR    = schema.GroupVersionResource{Group: "postgresql.sql.example.org", Version: "v1alpha1", Resource: "roles"}
	userGK     = schema.GroupKind{Group: "postgresql.sql.example.org", Kind: "Role"}
	nsRDSGVR   = schema.GroupVersionResource{Group: "database.aws.m.example.org", Version: "v1beta1", Resource: "rdsinstances"}
	nsRDSGK    = schema.GroupKind{Group: "database.aws.m.example.org", Kind: "RDSInstance"}
)

// mod changes an object under construction.
type mod func(u *unstructured.Unstructured)

func build(name string, mods ...mod) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name}, "spec": map[string]any{}}}
	u.SetResourceVersion("1")
	for _, m := range mods {
		m(u)
	}
	return u
}

func inNamespace(ns string) mod { return func(u *unstructured.Unstructured) { u.SetNamespace(ns) } }

func deletingSince(d time.Duration) mod {
	return func(u *unstructured.Unstructured) {
		t := metav1.NewTime(now.Add(-d))
		u.SetDeletionTimestamp(&t)
	}
}

func finalizers(f ...string) mod {
	return func(u *unstructured.Unstructured) { u.SetFinalizers(f) }
}

func claimLabels(ns, name string) mod {
	return func(u *unstructured.Unstructured) {
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[labelClaimNamespace], l[labelClaimName] = ns, name
		u.SetLabels(l)
	}
}

func claimRef(ns, name string) mod {
	return func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"apiVersion": "database.example.org/v1alpha1", "kind": "PostgreSQLInstance", "namespace": ns, "name": name}, "spec", "claimRef")
	}
}

func externalName(n string) mod {
	return func(u *unstructured.Unstructured) {
		a := u.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[annotationExtName] = n
		u.SetAnnotations(a)
	}
}

func ownedBy(apiVersion, kind, name string) mod {
	return func(u *unstructured.Unstructured) {
		t := true
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: &t, BlockOwnerDeletion: &t}})
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[labelComposite] = name
		u.SetLabels(l)
	}
}

func composedByPG(name string) mod {
	return ownedBy("database.example.org/v1alpha1", "XPostgreSQLInstance", name)
}

func resourceRefs(v2 bool, refs ...map[string]any) mod {
	return func(u *unstructured.Unstructured) {
		list := make([]any, len(refs))
		for i, r := range refs {
			list[i] = r
		}
		path := []string{"spec", "resourceRefs"}
		if v2 {
			path = []string{"spec", "crossplane", "resourceRefs"}
		}
		_ = unstructured.SetNestedSlice(u.Object, list, path...)
	}
}

// xr is a composite resource as its informer caches it.
func xr(name string, mods ...mod) *object {
	o, err := transform(build(name, mods...))
	if err != nil {
		panic(err)
	}
	return o.(*object)
}

// mr is a managed resource as its metadata-only informer caches it.
func mr(name string, mods ...mod) *object {
	u := build(name, mods...)
	var m metav1.PartialObjectMetadata
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"metadata": u.Object["metadata"]}, &m); err != nil {
		panic(err)
	}
	o, err := transform(&m)
	if err != nil {
		panic(err)
	}
	return o.(*object)
}

// req is a request body: the object as a client sends it.
func req(name string, mods ...mod) map[string]any { return build(name, mods...).Object }

// cluster describes the caches of one test.
type cluster struct {
	s      *snapshot
	owners *ownerIndex
}

func newCluster() *cluster { return &cluster{s: newSnapshot(), owners: newOwnerIndex()} }

// store adds an object to a watch's cache as its informer does: to the
// store, then through the event handler that keeps the owner index.
// store keeps o as a Watch does: prepare, store, then the handler.
func store(w *watch, o *object) {
	w.owners.prepare(w)(o)
	if err := w.indexer.Add(o); err != nil {
		panic(err)
	}
	w.owners.handler(w).OnAdd(o, true)
}

func (c *cluster) watch(gk schema.GroupKind, gvr schema.GroupVersionResource, namespaced bool, r role, st state, objs ...*object) *cluster {
	idx := newObjectStore()
	w := &watch{gk: gk, gvr: gvr, namespaced: namespaced, role: r, indexer: idx, owners: c.owners, objects: idx.Len, synced: func() bool { return st == stateSynced },
		forbidden: func() bool { return st == stateForbidden }, cancel: func() {}}
	for _, o := range objs {
		store(w, o)
	}
	c.s.add(w)
	return c
}

// xrd registers an XRD, its served kinds, and a cache of its composites.
func (c *cluster) xrd(x *xrd, gvr schema.GroupVersionResource, namespaced bool, st state, objs ...*object) *cluster {
	c.s.xrds[x.compositeGK()] = x
	c.s.served[x.compositeGR()] = true
	if x.claimKind != "" {
		c.s.claims[x.claimGK()] = x
		c.s.served[x.claimGR()] = true
	}
	return c.watch(x.compositeGK(), gvr, namespaced, roleComposite, st, objs...)
}

func (c *cluster) managed(gk schema.GroupKind, gvr schema.GroupVersionResource, namespaced bool, st state, objs ...*object) *cluster {
	return c.watch(gk, gvr, namespaced, roleManaged, st, objs...)
}

// rule is a claimguard with cfg whose caches are the cluster's.
func (c *cluster) rule(cfg Config) *Rule {
	r := New(cfg)
	r.found.owners = c.owners
	r.now = func() time.Time { return now }
	r.found.snap.Store(c.s)
	r.found.ready.Store(true)
	return r
}

func (c *cluster) defaults() *Rule { return c.rule(Config{}) }
