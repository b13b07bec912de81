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
	// finalizers are the object's finalizers as the request lists them;
	// the cached form's interned list is left empty, since nothing prints
	// a request's finalizers.
	finalizers []string
}

// requestMeta is the part of the metadata claimguard reads; managed
// fields and everything else are skipped while decoding.
type requestMeta struct {
	Name              string                  `json:"name"`
	Namespace         string                  `json:"namespace"`
	Labels            map[string]string       `json:"labels"`
	Annotations       map[string]string       `json:"annotations"`
	OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
	Finalizers        []string                `json:"finalizers"`
	DeletionTimestamp *metav1.Time            `json:"deletionTimestamp"`
}

// managedBody is a managed resource as claimguard reads it: metadata only,
// because MR specs belong to many providers and claimguard needs nothing
// from them.
type managedBody struct {
	Metadata requestMeta `json:"metadata"`
}

// compositeBody is a claim or composite resource: the metadata, and the spec
// fields Crossplane reserves. Each spec field is kept raw and decoded on
// its own, so a field of an unexpected shape is ignored instead of failing
// the request.
type compositeBody struct {
	Metadata requestMeta `json:"metadata"`
	Spec     struct {
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

// decodeObject reads an object of the given role from raw JSON, in one pass.
func decodeObject(raw []byte, r role) (*requested, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("the request carries no object")
	}
	if r == roleManaged {
		var b managedBody
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("decoding the object: %w", err)
		}
		// No claim: as for a cached live managed resource, nothing reads it.
		return fromRequestMeta(&b.Metadata, false), nil
	}
	var b compositeBody
	if err := json.Unmarshal(raw, &b); err != nil {
		// A spec field of a shape Crossplane never writes: read the
		// metadata alone, as for any other object.
		var m managedBody
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("decoding the object: %w", err)
		}
		return fromRequestMeta(&m.Metadata, true), nil
	}
	out := fromRequestMeta(&b.Metadata, true)
	_ = json.Unmarshal(b.Spec.CompositeDeletePolicy, &out.compositeDeletePolicy)
	if out.claim() == "" {
		var c struct{ Namespace, Name string }
		if json.Unmarshal(b.Spec.ClaimRef, &c) == nil {
			out.setClaim(claimKey(c.Namespace, c.Name))
		}
	}
	var refs []refJSON
	_ = json.Unmarshal(b.Spec.ResourceRefs, &refs)
	var cp struct {
		ResourceRefs []refJSON `json:"resourceRefs"`
	}
	if json.Unmarshal(b.Spec.Crossplane, &cp) == nil {
		refs = append(refs, cp.ResourceRefs...)
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

// fromRequestMeta builds the cached form (what an informer would hold) of
// a request's object, with its claim from Crossplane's labels if withClaim.
func fromRequestMeta(m *requestMeta, withClaim bool) *requested {
	owner := controllerOwner(m.OwnerReferences)
	o := &object{deletion: m.DeletionTimestamp, owner: owner}
	o.setID(m.Namespace, m.Name, "", m.Annotations[annotationExtName])
	if withClaim {
		o.setClaim(claimKey(m.Labels[labelClaimNamespace], m.Labels[labelClaimName]))
	}
	return &requested{object: o, controlled: owner != "", finalizers: m.Finalizers}
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
