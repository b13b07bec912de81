package claimguard

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// xrdGroupResource is Crossplane's CompositeResourceDefinition resource,
// served as v1 and (Crossplane v2) v2.
var xrdGroupResource = schema.GroupResource{Group: "apiextensions.crossplane.io", Resource: "compositeresourcedefinitions"}

// xrdVersions are the XRD API versions claimguard reads, most preferred
// first. The fields it needs have the same names in both.
var xrdVersions = []string{"v2", "v1"}

// xrd is what claimguard needs from a CompositeResourceDefinition: the
// composite kind, the claim kind (if any) and the default delete policy.
type xrd struct {
	name  string
	group string
	// composite and claim are the kinds and plurals; claim is empty when
	// the XRD offers no claim (every v2 XRD that is not LegacyCluster).
	compositeKind, compositePlural string
	claimKind, claimPlural         string
	// referenceable is the version Crossplane stores, the one to watch.
	referenceable string
	// defaultCompositeDeletePolicy is Background or Foreground.
	defaultCompositeDeletePolicy string
}

func (x *xrd) compositeGK() schema.GroupKind {
	return schema.GroupKind{Group: x.group, Kind: x.compositeKind}
}

func (x *xrd) compositeGR() schema.GroupResource {
	return schema.GroupResource{Group: x.group, Resource: x.compositePlural}
}

func (x *xrd) claimGK() schema.GroupKind {
	return schema.GroupKind{Group: x.group, Kind: x.claimKind}
}

func (x *xrd) claimGR() schema.GroupResource {
	return schema.GroupResource{Group: x.group, Resource: x.claimPlural}
}

// parseXRD reads an XRD; it fails when the composite kind cannot be named.
func parseXRD(u *unstructured.Unstructured) (*xrd, error) {
	spec, _ := u.Object["spec"].(map[string]any)
	if spec == nil {
		return nil, fmt.Errorf("CompositeResourceDefinition %s has no spec", u.GetName())
	}
	x := &xrd{
		name:                         u.GetName(),
		group:                        str(spec, "group"),
		compositeKind:                str(spec, "names", "kind"),
		compositePlural:              str(spec, "names", "plural"),
		claimKind:                    str(spec, "claimNames", "kind"),
		claimPlural:                  str(spec, "claimNames", "plural"),
		defaultCompositeDeletePolicy: str(spec, "defaultCompositeDeletePolicy"),
	}
	if x.group == "" || x.compositeKind == "" || x.compositePlural == "" {
		return nil, fmt.Errorf("CompositeResourceDefinition %s does not name its group, kind and plural", u.GetName())
	}
	if x.claimKind == "" || x.claimPlural == "" {
		x.claimKind, x.claimPlural = "", ""
	}
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		served, _ := m["served"].(bool)
		referenceable, _ := m["referenceable"].(bool)
		if name == "" || !served {
			continue
		}
		if referenceable || x.referenceable == "" {
			x.referenceable = name
		}
	}
	if x.defaultCompositeDeletePolicy == "" {
		x.defaultCompositeDeletePolicy = "Background"
	}
	return x, nil
}

// trimXRD is the XRD informer's TransformFunc: it keeps the fields parseXRD
// reads and drops the OpenAPI schemas, which are most of an XRD's size.
func trimXRD(in any) (any, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return in, nil
	}
	spec, _ := u.Object["spec"].(map[string]any)
	keep := map[string]any{}
	for _, k := range []string{"group", "names", "claimNames", "defaultCompositeDeletePolicy", "scope"} {
		if v, ok := spec[k]; ok {
			keep[k] = v
		}
	}
	if versions, ok := spec["versions"].([]any); ok {
		var vs []any
		for _, v := range versions {
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			vs = append(vs, map[string]any{"name": m["name"], "served": m["served"], "referenceable": m["referenceable"]})
		}
		keep["versions"] = vs
	}
	out := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(),
		"kind":       u.GetKind(),
		"spec":       keep,
	}}
	out.SetName(u.GetName())
	out.SetResourceVersion(u.GetResourceVersion())
	out.SetUID(u.GetUID())
	return out, nil
}
