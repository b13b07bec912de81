package apimigration

import (
	"slices"

	"k8s.io/apimachinery/pkg/version"
)

// What a version means under a target release, derived from the table.
//
// The target reads the table row of the newest release not newer than it
// (a target older than the table reads the oldest row). In that row:
//   - the preferred version is the newest served version the CRD does not
//     mark deprecated: what writers are told to use, and what a write is
//     only ever marked toward;
//   - a served version is deprecated if the CRD marks it `deprecated: true`,
//     or if it is not the preferred version and a later release in the
//     table no longer serves it (image-reflector-controller's v1beta1 in
//     Flux 2.6 is not marked, but 2.7 drops it); it is removed in the first
//     later release that no longer serves it;
//   - a version the row does not serve but an older row did is removed, in
//     the first release after the last one that served it;
//   - anything else (the preferred version, a version no release in the
//     table serves, such as a newer one) is left alone.

// row returns the index in a.Releases of the row the target reads.
func (a *API) row(target Release) int {
	i := 0
	for j := range a.Releases {
		if target.AtLeast(a.Releases[j].Release) {
			i = j
		}
	}
	return i
}

// Preferred is the version the target release wants written: the newest
// version it serves that its CRD does not mark deprecated.
func (a *API) Preferred(target Release) string {
	s := &a.Releases[a.row(target)]
	best := ""
	for _, v := range s.Served {
		if slices.Contains(s.Deprecated, v) {
			continue
		}
		if best == "" || compareVersions(v, best) > 0 {
			best = v
		}
	}
	if best == "" { // every served version deprecated: the newest of them
		for _, v := range s.Served {
			if best == "" || compareVersions(v, best) > 0 {
				best = v
			}
		}
	}
	return best
}

// status is what a write through version means under the target, and the
// release that removes (or removed) the version, zero when none in the
// table does.
func (a *API) status(version string, target Release) (Status, Release) {
	i := a.row(target)
	s := &a.Releases[i]
	if s.serves(version) {
		var removedIn Release
		for j := i + 1; j < len(a.Releases); j++ {
			if !a.Releases[j].serves(version) {
				removedIn = a.Releases[j].Release
				break
			}
		}
		if slices.Contains(s.Deprecated, version) || (removedIn != Release{} && version != a.Preferred(target)) {
			return DeprecatedVersion, removedIn
		}
		return Untouched, Release{}
	}
	for j := i - 1; j >= 0; j-- {
		if a.Releases[j].serves(version) {
			return RemovedVersion, a.Releases[j+1].Release
		}
	}
	return Untouched, Release{}
}

// Guarded lists, oldest first, the versions that are deprecated or
// removed under at least one release of the table: the writes the webhook
// must be sent, whatever the target.
func (a *API) Guarded() []string {
	var out []string
	for _, v := range a.Versions() {
		for _, r := range releases {
			if st, _ := a.status(v, r); st != Untouched {
				out = append(out, v)
				break
			}
		}
	}
	slices.SortStableFunc(out, compareVersions)
	return out
}

// compareVersions orders Kubernetes API versions oldest first (v1alpha1,
// v1beta1, v1beta2, v1, v2beta1, v2), as the API server does.
func compareVersions(a, b string) int {
	return version.CompareKubeAwareVersionStrings(a, b)
}
