package apimigration

import (
	"fmt"
	"slices"
	"strings"
)

// The Flux API versions this rule knows: for every Flux kind, what each
// Flux release Steward knows serves (table.go). Whether a version is
// deprecated or removed, and which version to use instead, is derived from
// it for the target release (serving.go). The webhook registration, the
// admission decision and `steward check` all read this one table, so they
// cannot disagree; TestTableMatchesFluxCRDs holds it to each release's
// real CRDs (e2e/upstream/flux/<release>/).

// API is one Flux kind and the versions each known release serves it at.
type API struct {
	Group    string
	Kind     string
	Resource string
	// Releases is what each release of Releases() serves, in that order.
	Releases []Serving
}

// Serving is one Flux kind as one release's CRD defines it.
type Serving struct {
	Release Release
	// Served are the versions the CRD serves.
	Served []string
	// Storage is the CRD's storage version.
	Storage string
	// Deprecated are the served versions the CRD marks `deprecated: true`.
	Deprecated []string
}

// serves reports whether the release serves version.
func (s *Serving) serves(version string) bool { return slices.Contains(s.Served, version) }

// The Flux API groups.
const (
	KustomizeGroup    = "kustomize.toolkit.fluxcd.io"
	HelmGroup         = "helm.toolkit.fluxcd.io"
	SourceGroup       = "source.toolkit.fluxcd.io"
	NotificationGroup = "notification.toolkit.fluxcd.io"
	ImageGroup        = "image.toolkit.fluxcd.io"
)

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

// Knows reports whether any release in the table serves version of the
// kind. `steward check` reports any other version of a known kind (a typo,
// or a version newer than the table), which the webhook leaves alone.
func (a *API) Knows(version string) bool {
	for i := range a.Releases {
		if a.Releases[i].serves(version) {
			return true
		}
	}
	return false
}

// Versions lists every version any release in the table serves: the one
// the newest release prefers first, then the others oldest first.
func (a *API) Versions() []string {
	newest := a.Preferred(NewestRelease())
	vs := []string{newest}
	for i := range a.Releases {
		for _, v := range a.Releases[i].Served {
			if !slices.Contains(vs, v) {
				vs = append(vs, v)
			}
		}
	}
	slices.SortStableFunc(vs[1:], compareVersions)
	return vs
}

// Releases lists the Flux releases the table describes, oldest first.
func Releases() []Release { return slices.Clone(releases) }

// NewestRelease is the newest Flux release in the table: the release whose
// upgrade breaks the most, which `steward check` checks against unless
// told otherwise.
func NewestRelease() Release { return releases[len(releases)-1] }

// NewerReleaseError is the error of ParseKnownRelease for a release newer
// than the table.
type NewerReleaseError struct {
	Release Release
}

func (e *NewerReleaseError) Error() string {
	known := make([]string, len(releases))
	for i, k := range releases {
		known[i] = k.String()
	}
	return fmt.Sprintf("newer than %s, the newest Flux release Steward knows (it knows %s; an older release is read as %s)",
		NewestRelease(), strings.Join(known, ", "), releases[0])
}

// ParseKnownRelease reads a Flux release as ParseRelease does and refuses
// one newer than the newest in the table (a *NewerReleaseError, naming
// those it has): what a later release removes is not in the table, so a
// decision against it would pass what that release breaks. A release older
// than the table is read as its oldest (see API.status), which removes
// none of the versions the table lists.
func ParseKnownRelease(s string) (Release, error) {
	r, err := ParseRelease(s)
	if err != nil {
		return Release{}, err
	}
	if !NewestRelease().AtLeast(r) {
		return Release{}, &NewerReleaseError{Release: r}
	}
	return r, nil
}
