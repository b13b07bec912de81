package clustercache

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Served is one answer of discovery: what the API server serves, and which
// CustomResourceDefinitions exist. It is replaced as a whole, never changed.
type Served struct {
	// Resources are the served resources by group and resource;
	// subresources are left out.
	Resources map[schema.GroupResource]*Resource
	// CRDs are the group and resource of every CustomResourceDefinition,
	// served yet or not. Empty when Steward may not list them.
	CRDs map[schema.GroupResource]bool
	// CRDAppVersions are the values of the CRDs' AppVersionLabel, by
	// group and resource, for the CRDs that carry it.
	CRDAppVersions map[schema.GroupResource]string
	// Partial is set when some API groups failed discovery: a resource
	// missing from Resources may still be served.
	Partial bool
}

// Resource is one resource the API server serves.
type Resource struct {
	schema.GroupResource
	Kind       string
	Namespaced bool
	// Versions are the served versions, the one the server prefers first.
	Versions   []string
	Categories []string
}

// Preferred is the version the server prefers for the resource.
func (r *Resource) Preferred() string { return r.Versions[0] }

// GVR is the resource at version if that is served, else at the
// preferred version.
func (r *Resource) GVR(version string) schema.GroupVersionResource {
	if version == "" || !slices.Contains(r.Versions, version) {
		version = r.Preferred()
	}
	return r.WithVersion(version)
}

// resourcesFrom flattens discovery's answer into served resources by group
// and resource. A resource served in its group's preferred version comes
// first in that version; otherwise its versions keep discovery's order,
// which is the server's priority.
func resourcesFrom(groups []*metav1.APIGroup, lists []*metav1.APIResourceList) map[schema.GroupResource]*Resource {
	preferred := map[string]string{}
	for _, g := range groups {
		if g != nil {
			preferred[g.Name] = g.PreferredVersion.Version
		}
	}
	out := map[schema.GroupResource]*Resource{}
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
				a = &Resource{GroupResource: gr, Kind: r.Kind, Namespaced: r.Namespaced}
				out[gr] = a
			}
			if len(r.Categories) > 0 {
				a.Categories = r.Categories
			}
			if gv.Version == preferred[gv.Group] {
				a.Versions = append([]string{gv.Version}, a.Versions...)
			} else {
				a.Versions = append(a.Versions, gv.Version)
			}
		}
	}
	return out
}
