package fleetguard

import (
	"encoding/binary"
	"strings"
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
	for _, gvk := range gitops.ScaledKinds() {
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
// audit's drift summary is kept, for drifted workloads (drift.go). What it
// keeps is packed (packCached). It accepts its own output, as informer
// transforms must.
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
	// This function's own output keeps its values packed: they read back
	// as annotations.
	ownOutput := packed(in)
	annotations := in.Annotations
	if ownOutput {
		annotations = unpackCached(in)
	}
	kept := make(map[string]string, len(cachedKeys))
	// The hash label joins the kept annotations (cachedHashAnnotation).
	if hash, ok := in.Labels[LabelHash]; ok {
		kept[cachedHashAnnotation] = intern(hash)
	} else if v, ok := annotations[cachedHashAnnotation]; ok && ownOutput {
		kept[cachedHashAnnotation] = v
	}
	for _, k := range readAnnotations {
		if v, ok := annotations[k]; ok {
			kept[k] = intern(v)
		}
	}
	// A scale request asks whether the chart declares the replicas, which
	// only managedFields tell: a workload whose chart does (or that has no
	// entry of the agent's, so every field counts) keeps a marker, the
	// rest nothing.
	if !ownOutput {
		if declared, unrecorded := gitops.ReplicasInGit(in, agentOwner); declared {
			kept[cachedReplicasAnnotation] = intern(unrecorded)
		}
	} else if v, ok := annotations[cachedReplicasAnnotation]; ok {
		kept[cachedReplicasAnnotation] = v
	}
	// The audit's drift check reads managedFields, which are dropped here:
	// a drifted workload keeps their summary instead (drift.go), the rest
	// nothing. An object without managedFields keeps the summary it has.
	if s, ok := driftOf(in.ManagedFields); ok {
		kept[driftAnnotation] = s.encode()
	} else if v, ok := annotations[driftAnnotation]; ok && len(in.ManagedFields) == 0 {
		kept[driftAnnotation] = v
	}
	out.GenerateName = packCached(kept)
	return out, nil
}

// cachedKeys are the values a trimmed workload keeps, in the order of its
// packed slots (packCached).
var cachedKeys = [...]string{cachedHashAnnotation, AnnotationID, AnnotationOwnerGVK, AnnotationReleaseName, AnnotationReleaseNamespace, cachedReplicasAnnotation, driftAnnotation}

// packedMark begins a packed workload's generateName.
const packedMark = "fleetguard.steward.dev/cached:"

// packCached packs the kept values into one string, held in a string
// field of the cached object, which needs no allocation of its own: its
// generateName, which only a create reads (the cached object is never
// written back to the cluster, and nothing reads the field of a cached
// one). After packedMark each slot of cachedKeys is its value's length
// plus one as a uvarint, 0 for a key the workload lacks, then the value:
// no byte a value may hold (an annotation's may hold any) can shift the
// slots. The string is interned, so the workloads of one bundle, whose
// kept values are the same, share it: a cached workload pays for nothing
// but its share (a Go map of the annotations would cost about 340 bytes,
// a list holding the string 16).
func packCached(kept map[string]string) string {
	n := len(packedMark)
	for _, k := range cachedKeys {
		n += binary.MaxVarintLen64 + len(kept[k])
	}
	b := make([]byte, 0, n)
	b = append(b, packedMark...)
	for _, k := range cachedKeys {
		v, ok := kept[k]
		if !ok {
			b = binary.AppendUvarint(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(v))+1)
		b = append(b, v...)
	}
	return intern(string(b))
}

// unpackCached reads a packed workload's kept values back as
// annotations, substrings of the packed string; nil for an object that is
// not packed (or whose packing does not parse).
func unpackCached(o *metav1.PartialObjectMetadata) map[string]string {
	if !packed(o) {
		return nil
	}
	rest := o.GenerateName[len(packedMark):]
	out := make(map[string]string, len(cachedKeys))
	for _, k := range cachedKeys {
		n, w := binary.Uvarint([]byte(rest[:min(len(rest), binary.MaxVarintLen64)]))
		if w <= 0 || n > uint64(len(rest)-w)+1 {
			return nil
		}
		rest = rest[w:]
		if n == 0 {
			continue
		}
		out[k], rest = rest[:n-1], rest[n-1:]
	}
	return out
}

// packed reports whether o is trimWorkload's output: the API server's
// objects in the cache all carry the hash label the informers select on.
func packed(o *metav1.PartialObjectMetadata) bool {
	return o.Labels == nil && strings.HasPrefix(o.GenerateName, packedMark)
}

// cachedReplicasAnnotation marks a cached workload whose replicas Git
// declares; its value names the agent's field managers when the workload
// has no entry of theirs. Never written to the cluster.
const cachedReplicasAnnotation = "fleetguard.steward.dev/replicas-in-git"

// agentOwner is the Fleet agent as ReplicasInGit reads its entries.
var agentOwner = []gitops.Owner{{FieldManagers: agentFieldManagers}}

// cachedHashAnnotation holds a cached workload's LabelHash. It is never
// written to the cluster: the cache keeps one packed string per workload
// (packCached), and cachedMeta gives the hash back as a label.
const cachedHashAnnotation = "fleetguard.steward.dev/hash"

// cachedMeta is a workload of the metadata cache as the scale decision
// and the audit read it: what trimWorkload kept as annotations, and its
// hash label where trimWorkload keeps it. An object the cache never
// trimmed reads as it is.
func cachedMeta(o *metav1.PartialObjectMetadata) objectMeta {
	m := objectMeta{Name: o.Name, Namespace: o.Namespace, Labels: o.Labels, Annotations: o.Annotations}
	if packed(o) {
		m.Annotations = unpackCached(o)
	}
	if hash, ok := m.Annotations[cachedHashAnnotation]; ok && m.Labels == nil {
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
