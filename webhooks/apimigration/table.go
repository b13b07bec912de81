package apimigration

import "strings"

// The Flux releases the table describes, oldest first. A target older
// than the first is read as the first, a newer one as the last.
var (
	flux26   = MustParseRelease("2.6")
	flux27   = MustParseRelease("2.7")
	flux28   = MustParseRelease("2.8")
	flux29   = MustParseRelease("2.9")
	flux210  = MustParseRelease("2.10")
	releases = []Release{flux26, flux27, flux28, flux29, flux210}
)

// FluxMigrateSince is the first Flux release whose CLI has `flux
// migrate`: the messages advise it only for targets at least as new.
func FluxMigrateSince() Release { return flux27 }

// in is one release's row: the served versions, the storage version and
// the deprecated versions, space-separated, as the release's CRD has them.
func in(r Release, served, storage, deprecated string) Serving {
	return Serving{Release: r, Served: strings.Fields(served), Storage: storage, Deprecated: strings.Fields(deprecated)}
}

// Shared histories: source and kustomize drop v1beta1 in 2.7 and v1beta2
// in 2.8; notification drops v1beta1 in 2.7 and v1beta2 in 2.9, and in
// 2.10 Alert and Provider reach v1, which they store, marking v1beta3
// deprecated.
var (
	v1From28 = []Serving{
		in(flux26, "v1 v1beta1 v1beta2", "v1", "v1beta1 v1beta2"),
		in(flux27, "v1 v1beta2", "v1", "v1beta2"),
		in(flux28, "v1", "v1", ""),
		in(flux29, "v1", "v1", ""),
		in(flux210, "v1", "v1", ""),
	}
	receiver = []Serving{
		in(flux26, "v1 v1beta1 v1beta2", "v1", "v1beta1 v1beta2"),
		in(flux27, "v1 v1beta2", "v1", "v1beta2"),
		in(flux28, "v1 v1beta2", "v1", "v1beta2"),
		in(flux29, "v1", "v1", ""),
		in(flux210, "v1", "v1", ""),
	}
	alertProvider = []Serving{
		in(flux26, "v1beta1 v1beta2 v1beta3", "v1beta3", "v1beta1 v1beta2"),
		in(flux27, "v1beta2 v1beta3", "v1beta3", "v1beta2"),
		in(flux28, "v1beta2 v1beta3", "v1beta3", "v1beta2"),
		in(flux29, "v1beta3", "v1beta3", ""),
		in(flux210, "v1 v1beta3", "v1", "v1beta3"),
	}
	// The image APIs reach v1 in 2.7; in 2.6, v1beta2 is the newest, and
	// image-reflector-controller does not mark v1beta1 deprecated.
	imageReflector = []Serving{
		in(flux26, "v1beta1 v1beta2", "v1beta2", ""),
		in(flux27, "v1 v1beta2", "v1", "v1beta2"),
		in(flux28, "v1 v1beta2", "v1", "v1beta2"),
		in(flux29, "v1", "v1", ""),
		in(flux210, "v1", "v1", ""),
	}
	imageAutomation = []Serving{
		in(flux26, "v1beta1 v1beta2", "v1beta2", "v1beta1"),
		in(flux27, "v1 v1beta2", "v1", "v1beta2"),
		in(flux28, "v1 v1beta2", "v1", "v1beta2"),
		in(flux29, "v1", "v1", ""),
		in(flux210, "v1", "v1", ""),
	}
)

// apis lists every Flux kind the rule guards, in a stable order (it is the
// order of the rendered webhook rules).
var apis = []API{
	{KustomizeGroup, "Kustomization", "kustomizations", v1From28},
	{HelmGroup, "HelmRelease", "helmreleases", []Serving{
		in(flux26, "v2 v2beta1 v2beta2", "v2", "v2beta1 v2beta2"),
		in(flux27, "v2 v2beta2", "v2", "v2beta2"),
		in(flux28, "v2", "v2", ""),
		in(flux29, "v2", "v2", ""),
		in(flux210, "v2", "v2", ""),
	}},
	{SourceGroup, "GitRepository", "gitrepositories", v1From28},
	{SourceGroup, "HelmRepository", "helmrepositories", v1From28},
	{SourceGroup, "HelmChart", "helmcharts", v1From28},
	{SourceGroup, "Bucket", "buckets", v1From28},
	{SourceGroup, "OCIRepository", "ocirepositories", []Serving{
		in(flux26, "v1 v1beta2", "v1", "v1beta2"),
		in(flux27, "v1 v1beta2", "v1", "v1beta2"),
		in(flux28, "v1", "v1", ""),
		in(flux29, "v1", "v1", ""),
		in(flux210, "v1", "v1", ""),
	}},
	{NotificationGroup, "Receiver", "receivers", receiver},
	{NotificationGroup, "Alert", "alerts", alertProvider},
	{NotificationGroup, "Provider", "providers", alertProvider},
	{ImageGroup, "ImageRepository", "imagerepositories", imageReflector},
	{ImageGroup, "ImagePolicy", "imagepolicies", imageReflector},
	{ImageGroup, "ImageUpdateAutomation", "imageupdateautomations", imageAutomation},
}
