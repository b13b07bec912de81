package suspendnotice

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Annotations Steward writes on a suspended Flux object.
const (
	// AnnotationSuspendedBy is the user who set spec.suspend to true.
	AnnotationSuspendedBy = "steward.dev/suspended-by"
	// AnnotationSuspendedAt is when, in RFC 3339 (UTC). Its presence is
	// what the event lookup reads, so a metadata-only cache is enough.
	AnnotationSuspendedAt = "steward.dev/suspended-at"
)

// fluxKind is one Flux kind that has spec.suspend, and the flux CLI command
// that resumes it.
type fluxKind struct {
	Group    string
	Resource string
	Kind     string
	Resume   string
}

// fluxKinds are every Flux reconcilable kind with spec.suspend, in every
// API version (v1 and the deprecated betas all have the field).
// ImagePolicy is not among them: it has no spec.suspend; the
// ImageRepository it reads from is what gets suspended.
var fluxKinds = []fluxKind{
	{"kustomize.toolkit.fluxcd.io", "kustomizations", "Kustomization", "flux resume kustomization"},
	{"helm.toolkit.fluxcd.io", "helmreleases", "HelmRelease", "flux resume helmrelease"},
	{"source.toolkit.fluxcd.io", "gitrepositories", "GitRepository", "flux resume source git"},
	{"source.toolkit.fluxcd.io", "ocirepositories", "OCIRepository", "flux resume source oci"},
	{"source.toolkit.fluxcd.io", "helmrepositories", "HelmRepository", "flux resume source helm"},
	{"source.toolkit.fluxcd.io", "helmcharts", "HelmChart", "flux resume source chart"},
	{"source.toolkit.fluxcd.io", "buckets", "Bucket", "flux resume source bucket"},
	{"image.toolkit.fluxcd.io", "imagerepositories", "ImageRepository", "flux resume image repository"},
	{"image.toolkit.fluxcd.io", "imageupdateautomations", "ImageUpdateAutomation", "flux resume image update"},
	{"notification.toolkit.fluxcd.io", "alerts", "Alert", "flux resume alert"},
	{"notification.toolkit.fluxcd.io", "providers", "Provider", "flux resume alert-provider"},
	{"notification.toolkit.fluxcd.io", "receivers", "Receiver", "flux resume receiver"},
}

// defaultControllers are the Flux controllers whose events are rewritten,
// as they name themselves in events (source.component / reportingComponent
// in core/v1, reportingController in events.k8s.io/v1).
var defaultControllers = []string{
	"kustomize-controller",
	"helm-controller",
	"source-controller",
	"notification-controller",
	"image-reflector-controller",
	"image-automation-controller",
}

var byGroupKind = func() map[schema.GroupKind]fluxKind {
	m := make(map[schema.GroupKind]fluxKind, len(fluxKinds))
	for _, k := range fluxKinds {
		m[schema.GroupKind{Group: k.Group, Kind: k.Kind}] = k
	}
	return m
}()

func (k fluxKind) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: k.Group, Resource: k.Resource}
}

// groupedResources lists the kinds' resources by API group, in a stable
// order, for the webhook rules.
func groupedResources() (groups []string, resources map[string][]string) {
	resources = map[string][]string{}
	for _, k := range fluxKinds {
		if _, ok := resources[k.Group]; !ok {
			groups = append(groups, k.Group)
		}
		resources[k.Group] = append(resources[k.Group], k.Resource)
	}
	return groups, resources
}
