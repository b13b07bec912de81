package claimguard

import (
	objectview "github.com/stewardhq/steward/webhooks/object"

	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// requested is an object from an admission request, in the same small form
// the caches hold, plus the few fields only requests need.
type requested struct {
	*object
	// controlled is true when the object has a controller owner (a nested
	// composite or a composed resource).
	controlled bool
	// compositeDeletePolicy is a claim's spec.compositeDeletePolicy.
	compositeDeletePolicy string
	// finalizers are the object's finalizers as the request lists them;
	// the cached form's interned list is left empty, since nothing prints
	// a request's finalizers.
	finalizers []string
}

type refJSON struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
}

// decodeObject reads an object of the given role through its view: the
// metadata, and for claims and composite resources the spec fields
// Crossplane reserves. MR specs belong to many providers and claimguard
// needs nothing from them. Each spec field is decoded on its own, so a
// field of an unexpected shape is ignored instead of failing the request.
func decodeObject(v *objectview.View, r role) (*requested, error) {
	if err := v.FormErr(); err != nil {
		return nil, fmt.Errorf("decoding the object: %w", err)
	}
	if r == roleManaged {
		// No claim: as for a cached live managed resource, nothing reads it.
		return fromView(v, false), nil
	}
	out := fromView(v, true)
	_ = json.Unmarshal(v.Field("spec", "compositeDeletePolicy"), &out.compositeDeletePolicy)
	if out.claim() == "" {
		var c struct{ Namespace, Name string }
		if json.Unmarshal(v.Field("spec", "claimRef"), &c) == nil {
			out.setClaim(claimKey(c.Namespace, c.Name))
		}
	}
	var refs, v2 []refJSON
	_ = json.Unmarshal(v.Field("spec", "resourceRefs"), &refs)
	if json.Unmarshal(v.Field("spec", "crossplane", "resourceRefs"), &v2) == nil {
		refs = append(refs, v2...)
	}
	var parsed []ref
	for _, rf := range refs {
		gv, err := schema.ParseGroupVersion(rf.APIVersion)
		if err != nil || rf.Kind == "" || rf.Name == "" {
			continue
		}
		ns := rf.Namespace
		if ns == "" {
			ns = out.namespace()
		}
		parsed = append(parsed, newRef(gv.Group, rf.Kind, ns, rf.Name))
	}
	out.setRefs(parsed)
	return out, nil
}

// fromView builds the cached form (what an informer would hold) of a
// request's object, with its claim from Crossplane's labels if withClaim.
// Owner references, finalizers and the deletion timestamp of a shape the
// API server never sends read as none.
func fromView(v *objectview.View, withClaim bool) *requested {
	owner := controllerOwner(v.OwnerReferences())
	var deletion *metav1.Time
	if v.Deleting() {
		deletion = new(metav1.Time)
		if json.Unmarshal(v.Field("metadata", "deletionTimestamp"), deletion) != nil {
			deletion = nil
		}
	}
	var finalizers []string
	_ = json.Unmarshal(v.Field("metadata", "finalizers"), &finalizers)
	o := &object{deletion: deletion, owner: owner}
	extName, _ := v.Annotation(annotationExtName)
	o.setID(v.Namespace(), v.Name(), "", extName)
	if withClaim {
		ns, _ := v.Label(labelClaimNamespace)
		name, _ := v.Label(labelClaimName)
		o.setClaim(claimKey(ns, name))
	}
	return &requested{object: o, controlled: owner != "", finalizers: finalizers}
}

// propagationPolicy reads DeleteOptions.propagationPolicy from a DELETE
// request's options; empty means the API server's default (Background for
// custom resources).
func propagationPolicy(raw []byte) (metav1.DeletionPropagation, error) {
	if len(raw) == 0 {
		return "", nil
	}
	var o struct {
		PropagationPolicy *metav1.DeletionPropagation `json:"propagationPolicy"`
		OrphanDependents  *bool                       `json:"orphanDependents"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return "", fmt.Errorf("decoding the delete options: %w", err)
	}
	switch {
	case o.PropagationPolicy != nil:
		return *o.PropagationPolicy, nil
	case o.OrphanDependents != nil && *o.OrphanDependents:
		return metav1.DeletePropagationOrphan, nil
	}
	return "", nil
}
