package fleetguard

import (
	"unique"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
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
	for _, gvk := range gitops.ScaledKinds {
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
		Namespace:       intern(in.Namespace),
		ResourceVersion: in.ResourceVersion,
	}}
	// The hash label joins the annotations (cachedHashAnnotation): a second
	// map would cost another 330 bytes for one entry. An object without
	// labels or managedFields is this function's own output.
	if hash, ok := in.Labels[LabelHash]; ok {
		setAnnotation(out, cachedHashAnnotation, intern(hash))
	} else if v, ok := in.Annotations[cachedHashAnnotation]; ok && in.Labels == nil && len(in.ManagedFields) == 0 {
		setAnnotation(out, cachedHashAnnotation, v)
	}
	for _, k := range readAnnotations {
		if v, ok := in.Annotations[k]; ok {
			setAnnotation(out, k, intern(v))
		}
	}
	// A scale request asks whether the chart declares the replicas, which
	// only managedFields tell: a workload whose chart does (or that has no
	// entry of the agent's, so every field counts) keeps a marker, the
	// rest nothing.
	ownOutput := in.Labels == nil && len(in.ManagedFields) == 0
	if !ownOutput {
		if declared, unrecorded := gitops.ReplicasInGit(in, agentOwner); declared {
			setAnnotation(out, cachedReplicasAnnotation, unrecorded)
		}
	} else if v, ok := in.Annotations[cachedReplicasAnnotation]; ok {
		setAnnotation(out, cachedReplicasAnnotation, v)
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
		o.Annotations = make(map[string]string, len(readAnnotations)+1)
	}
	o.Annotations[k] = v
}

// cachedReplicasAnnotation marks a cached workload whose replicas Git
// declares; its value names the agent's field managers when the workload
// has no entry of theirs. Never written to the cluster.
const cachedReplicasAnnotation = "fleetguard.steward.dev/replicas-in-git"

// agentOwner is the Fleet agent as ReplicasInGit reads its entries.
var agentOwner = []gitops.Owner{{FieldManagers: agentFieldManagers}}

// cachedHashAnnotation holds a cached workload's LabelHash. It is never
// written to the cluster: the cache keeps one map per workload, its
// annotations, and cachedMeta gives the hash back as a label.
const cachedHashAnnotation = "fleetguard.steward.dev/hash"

// cachedMeta is a workload of the metadata cache as the scale decision
// and the audit read it: its hash label where trimWorkload keeps it.
func cachedMeta(o *metav1.PartialObjectMetadata) objectMeta {
	m := objectMeta{Name: o.Name, Namespace: o.Namespace, Labels: o.Labels, Annotations: o.Annotations}
	if hash, ok := o.Annotations[cachedHashAnnotation]; ok && m.Labels == nil {
		m.Labels = map[string]string{LabelHash: hash}
	}
	return m
}

// intern shares the bytes of values that repeat across a bundle's
// workloads (namespaces, release names, hashes) among the objects cached
// between two collections.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}
