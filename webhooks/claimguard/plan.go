package claimguard

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
)

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
	// ignored are the XRDs whose kinds are not Crossplane's to compose,
	// with the reason, by XRD name.
	ignored map[string]string
}

// makePlan decides from the served resources, the CRDs (by group and
// resource) and the XRDs. An XRD names its group and plurals freely, and
// claimguard's webhook entries fail closed, so an XRD's kinds are trusted
// only when they are what Crossplane generates for it (notComposable).
func makePlan(resources map[schema.GroupResource]*clustercache.Resource, xrds []*xrd, crds map[schema.GroupResource]bool) plan {
	p := plan{claims: map[schema.GroupKind]*xrd{}, xrds: map[schema.GroupKind]*xrd{}, served: map[schema.GroupResource]bool{}, ignored: map[string]string{}}
	composite := map[schema.GroupResource]bool{}
	sort.Slice(xrds, func(i, j int) bool { return xrds[i].name < xrds[j].name })
	for _, x := range xrds {
		if why := notComposable(x, resources, crds); why != "" {
			p.ignored[x.name] = why
			continue
		}
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
		composite[a.GroupResource] = true
		p.served[a.GroupResource] = true
		p.watches = append(p.watches, wanted{gk: x.compositeGK(), gvr: a.GVR(x.referenceable), namespaced: a.Namespaced, role: roleComposite})
	}
	for _, a := range resources {
		if composite[a.GroupResource] || !slices.Contains(a.Categories, "managed") {
			continue
		}
		p.watches = append(p.watches, wanted{gk: schema.GroupKind{Group: a.Group, Kind: a.Kind}, gvr: a.GVR(""), namespaced: a.Namespaced, role: roleManaged})
	}
	sort.Slice(p.watches, func(i, j int) bool { return p.watches[i].gvr.String() < p.watches[j].gvr.String() })
	return p
}

// notComposable says why an XRD's kinds must not enter claimguard's
// registration, or "" when they may. They may not when the XRD's group is
// one of Kubernetes' own, nor when a kind it names is served by anything
// but a CustomResourceDefinition in Crossplane's category for it
// ("composite" for the XR, "claim" for the claim): an XRD naming
// apps/deployments, or another project's CRD, would otherwise have Steward
// judge, and while it is down block, every write of those kinds. A kind
// not served yet is no reason: it joins the rules only once served.
func notComposable(x *xrd, resources map[schema.GroupResource]*clustercache.Resource, crds map[schema.GroupResource]bool) string {
	if kubernetesGroup(x.group) {
		return fmt.Sprintf("spec.group %q is a Kubernetes API group, which Crossplane never composes", x.group)
	}
	check := func(gr schema.GroupResource, category string) string {
		a := resources[gr]
		switch {
		case a == nil:
			return ""
		case !crds[gr]:
			return fmt.Sprintf("%s is served by the API server itself or an aggregated API, not by a CustomResourceDefinition", gr)
		case !slices.Contains(a.Categories, category):
			return fmt.Sprintf("the CustomResourceDefinition %s is not in the %q category Crossplane gives the kinds it generates for an XRD", gr, category)
		}
		return ""
	}
	if why := check(x.compositeGR(), "composite"); why != "" {
		return why
	}
	if x.claimKind != "" {
		return check(x.claimGR(), "claim")
	}
	return ""
}

// legacyGroups are Kubernetes' API groups without a k8s.io suffix.
var legacyGroups = []string{"", "apps", "batch", "policy", "autoscaling", "extensions"}

// kubernetesGroup says whether group belongs to Kubernetes itself.
func kubernetesGroup(group string) bool {
	return slices.Contains(legacyGroups, group) || group == "k8s.io" || strings.HasSuffix(group, ".k8s.io")
}
