package claimguard

import (
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// apiResource is one resource the API server serves, from discovery.
type apiResource struct {
	gr         schema.GroupResource
	kind       string
	namespaced bool
	// versions are the served versions, the group's preferred one first.
	versions   []string
	categories []string
}

func (a *apiResource) gvr(version string) schema.GroupVersionResource {
	if version == "" || !slices.Contains(a.versions, version) {
		version = a.versions[0]
	}
	return a.gr.WithVersion(version)
}

// resourcesFrom flattens discovery's answer into served resources by
// group and resource; subresources are left out.
func resourcesFrom(groups []*metav1.APIGroup, lists []*metav1.APIResourceList) map[schema.GroupResource]*apiResource {
	preferred := map[string]string{}
	for _, g := range groups {
		if g != nil {
			preferred[g.Name] = g.PreferredVersion.Version
		}
	}
	out := map[schema.GroupResource]*apiResource{}
	for _, l := range lists {
		if l == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if r.Name == "" || r.Kind == "" || strings.Contains(r.Name, "/") {
				continue
			}
			gr := schema.GroupResource{Group: gv.Group, Resource: r.Name}
			a := out[gr]
			if a == nil {
				a = &apiResource{gr: gr, kind: r.Kind, namespaced: r.Namespaced}
				out[gr] = a
			}
			if len(r.Categories) > 0 {
				a.categories = r.Categories
			}
			if gv.Version == preferred[gv.Group] {
				a.versions = append([]string{gv.Version}, a.versions...)
			} else {
				a.versions = append(a.versions, gv.Version)
			}
		}
	}
	return out
}

// wanted is one kind claimguard should cache.
type wanted struct {
	gk         schema.GroupKind
	gvr        schema.GroupVersionResource
	namespaced bool
	role       role
}

// plan is what claimguard should know and cache, given the served
// resources and the XRDs: every served composite kind of an XRD, and every
// served kind in the "managed" category (Crossplane's managed resources).
type plan struct {
	claims  map[schema.GroupKind]*xrd
	xrds    map[schema.GroupKind]*xrd
	watches []wanted
	served  map[schema.GroupResource]bool
}

func makePlan(resources map[schema.GroupResource]*apiResource, xrds []*xrd) plan {
	p := plan{claims: map[schema.GroupKind]*xrd{}, xrds: map[schema.GroupKind]*xrd{}, served: map[schema.GroupResource]bool{}}
	composite := map[schema.GroupResource]bool{}
	sort.Slice(xrds, func(i, j int) bool { return xrds[i].name < xrds[j].name })
	for _, x := range xrds {
		if _, dup := p.xrds[x.compositeGK()]; dup {
			continue
		}
		p.xrds[x.compositeGK()] = x
		if x.claimKind != "" {
			p.claims[x.claimGK()] = x
			if a := resources[x.claimGR()]; a != nil {
				p.served[x.claimGR()] = true
			}
		}
		a := resources[x.compositeGR()]
		if a == nil {
			continue
		}
		composite[a.gr] = true
		p.served[a.gr] = true
		p.watches = append(p.watches, wanted{gk: x.compositeGK(), gvr: a.gvr(x.referenceable), namespaced: a.namespaced, role: roleComposite})
	}
	for _, a := range resources {
		if composite[a.gr] || !slices.Contains(a.categories, "managed") {
			continue
		}
		p.watches = append(p.watches, wanted{gk: schema.GroupKind{Group: a.gr.Group, Kind: a.kind}, gvr: a.gvr(""), namespaced: a.namespaced, role: roleManaged})
	}
	sort.Slice(p.watches, func(i, j int) bool { return p.watches[i].gvr.String() < p.watches[j].gvr.String() })
	return p
}
