package apimigration

// The Flux API versions this rule knows: for every Flux kind, its current
// version and each deprecated version with the Flux release that removes
// it. The webhook registration, the admission decision and `steward check`
// all read this one table, so they cannot disagree.

// API is one Flux kind and the versions it is, or was, served at.
type API struct {
	Group    string
	Kind     string
	Resource string
	// Current is the version clients should write.
	Current string
	// Deprecated are the older versions, each with its removal release.
	Deprecated []Deprecated
}

// Deprecated is one deprecated version of a Flux kind.
type Deprecated struct {
	Version string
	// RemovedIn is the first Flux release that no longer serves Version.
	RemovedIn Release
}

// The Flux API groups.
const (
	KustomizeGroup    = "kustomize.toolkit.fluxcd.io"
	HelmGroup         = "helm.toolkit.fluxcd.io"
	SourceGroup       = "source.toolkit.fluxcd.io"
	NotificationGroup = "notification.toolkit.fluxcd.io"
	ImageGroup        = "image.toolkit.fluxcd.io"
)

var (
	flux27 = MustParseRelease("2.7")
	flux28 = MustParseRelease("2.8")
	flux29 = MustParseRelease("2.9")
)

// Removal schedules shared by several kinds.
var (
	// v1beta1 goes in 2.7, v1beta2 in 2.8 (kustomize and source).
	betasTo28 = []Deprecated{{"v1beta1", flux27}, {"v1beta2", flux28}}
	// v1beta1 goes in 2.7, v1beta2 in 2.9 (notification and image).
	betasTo29 = []Deprecated{{"v1beta1", flux27}, {"v1beta2", flux29}}
)

// apis lists every Flux kind the rule guards, in a stable order (it is the
// order of the rendered webhook rules).
var apis = []API{
	{KustomizeGroup, "Kustomization", "kustomizations", "v1", betasTo28},
	{HelmGroup, "HelmRelease", "helmreleases", "v2", []Deprecated{{"v2beta1", flux27}, {"v2beta2", flux28}}},
	{SourceGroup, "GitRepository", "gitrepositories", "v1", betasTo28},
	{SourceGroup, "HelmRepository", "helmrepositories", "v1", betasTo28},
	{SourceGroup, "HelmChart", "helmcharts", "v1", betasTo28},
	{SourceGroup, "Bucket", "buckets", "v1", betasTo28},
	{SourceGroup, "OCIRepository", "ocirepositories", "v1", []Deprecated{{"v1beta2", flux28}}},
	{NotificationGroup, "Receiver", "receivers", "v1", betasTo29},
	{NotificationGroup, "Alert", "alerts", "v1beta3", betasTo29},
	{NotificationGroup, "Provider", "providers", "v1beta3", betasTo29},
	{ImageGroup, "ImageRepository", "imagerepositories", "v1", betasTo29},
	{ImageGroup, "ImagePolicy", "imagepolicies", "v1", betasTo29},
	{ImageGroup, "ImageUpdateAutomation", "imageupdateautomations", "v1", betasTo29},
}

// groupName is a group and a kind or resource name, the key of the
// indexes below (a struct, so a lookup builds no string).
type groupName struct{ group, name string }

// byKind and byResource index apis by group and Kind, and by group and
// resource.
var byKind, byResource = index()

func index() (map[groupName]*API, map[groupName]*API) {
	kinds, resources := map[groupName]*API{}, map[groupName]*API{}
	for i := range apis {
		a := &apis[i]
		kinds[groupName{a.Group, a.Kind}] = a
		resources[groupName{a.Group, a.Resource}] = a
	}
	return kinds, resources
}

// LookupKind returns the Flux API of a group and kind, or nil.
func LookupKind(group, kind string) *API {
	return byKind[groupName{group, kind}]
}

// LookupResource returns the Flux API of a group and resource, or nil.
func LookupResource(group, resource string) *API {
	return byResource[groupName{group, resource}]
}

// deprecated returns the deprecation entry of version, or nil when the
// version is current or unknown to the table.
func (a *API) deprecated(version string) *Deprecated {
	for i := range a.Deprecated {
		if a.Deprecated[i].Version == version {
			return &a.Deprecated[i]
		}
	}
	return nil
}

// Knows reports whether version is the current version of the kind or one
// of its deprecated ones. `steward check` reports any other version of a
// known kind (a typo, or a version newer than the table), which the
// webhook leaves alone.
func (a *API) Knows(version string) bool {
	return version == a.Current || a.deprecated(version) != nil
}

// Versions lists every version the table knows for the kind, the current
// one first.
func (a *API) Versions() []string {
	vs := []string{a.Current}
	for _, d := range a.Deprecated {
		vs = append(vs, d.Version)
	}
	return vs
}

// NewestRelease is the latest Flux release the table records a removal in:
// the release whose upgrade breaks the most, which `steward check` checks
// against unless told otherwise.
func NewestRelease() Release {
	newest := MustParseRelease(DefaultFluxVersion)
	for _, a := range apis {
		for _, d := range a.Deprecated {
			if d.RemovedIn.AtLeast(newest) {
				newest = d.RemovedIn
			}
		}
	}
	return newest
}
