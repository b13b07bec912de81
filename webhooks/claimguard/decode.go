package claimguard

import (
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
}

// requestMeta is the part of every object claimguard reads.
type requestMeta struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
}

// requestSpec holds the spec fields Crossplane reserves on claims and
// composite resources. Each is kept raw and decoded on its own, so a field
// of an unexpected shape is ignored instead of failing the request.
type requestSpec struct {
	Spec struct {
		ClaimRef              json.RawMessage `json:"claimRef"`
		CompositeDeletePolicy json.RawMessage `json:"compositeDeletePolicy"`
		ResourceRefs          json.RawMessage `json:"resourceRefs"`
		Crossplane            json.RawMessage `json:"crossplane"`
	} `json:"spec"`
}

type refJSON struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
}

// decodeObject reads an object of the given role from raw JSON. Managed
// resources are read for their metadata only: their specs belong to many
// providers and claimguard needs nothing from them.
func decodeObject(raw []byte, r role) (*requested, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("the request carries no object")
	}
	var m requestMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decoding the object's metadata: %w", err)
	}
	out := &requested{object: fromMeta(&m.Metadata, nil)}
	out.controlled = controllerOwner(m.Metadata.OwnerReferences) != ""
	if r == roleManaged {
		return out, nil
	}
	var s requestSpec
	if json.Unmarshal(raw, &s) != nil {
		return out, nil
	}
	_ = json.Unmarshal(s.Spec.CompositeDeletePolicy, &out.compositeDeletePolicy)
	if out.claim == "" {
		var c struct{ Namespace, Name string }
		if json.Unmarshal(s.Spec.ClaimRef, &c) == nil {
			out.claim = claimKey(c.Namespace, c.Name)
		}
	}
	var refs []refJSON
	_ = json.Unmarshal(s.Spec.ResourceRefs, &refs)
	var cp struct {
		ResourceRefs []refJSON `json:"resourceRefs"`
	}
	if json.Unmarshal(s.Spec.Crossplane, &cp) == nil {
		refs = append(refs, cp.ResourceRefs...)
	}
	for _, rf := range refs {
		gv, err := schema.ParseGroupVersion(rf.APIVersion)
		if err != nil || rf.Kind == "" || rf.Name == "" {
			continue
		}
		ns := rf.Namespace
		if ns == "" {
			ns = out.namespace
		}
		out.refs = append(out.refs, ref{group: gv.Group, kind: rf.Kind, namespace: ns, name: rf.Name})
	}
	return out, nil
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
