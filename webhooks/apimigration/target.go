package apimigration

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
)

// Source is where the target release came from, as the log line and the
// metric steward_apimigration_target_info name it.
type Source string

const (
	// SourceConfig: rules.apimigration.fluxVersion pins the target.
	SourceConfig Source = "config"
	// SourceClusterLabel: the app.kubernetes.io/version label Flux's
	// installation puts on its CRDs.
	SourceClusterLabel Source = "cluster-label"
	// SourceServedVersions: inferred from the versions the Flux CRDs serve,
	// when none carries the label.
	SourceServedVersions Source = "served-versions"
	// SourceDefault: no Flux CRD is installed (or none has been seen yet),
	// so DefaultFluxVersion.
	SourceDefault Source = "default"
)

// Target is the Flux release the rule decides against, and where it came
// from. It is replaced as a whole, never changed.
type Target struct {
	Release Release
	Source  Source
}

// String reads "2.8 (cluster-label)".
func (t Target) String() string { return t.Release.String() + " (" + string(t.Source) + ")" }

// defaultTarget is the target before anything is known of the cluster, and
// when it has no Flux CRDs.
var defaultTarget = Target{Release: MustParseRelease(DefaultFluxVersion), Source: SourceDefault}

// ClusterTarget chooses the target release from what the cluster cache
// last saw, for a configuration that pins none:
//
//   - the release in the app.kubernetes.io/version label of the Flux CRDs
//     (those of the kinds in the table), as `flux install` and the
//     release's install.yaml set it ("v2.8.0"); when the CRDs disagree, in
//     the middle of an upgrade or with one left behind, the oldest, so
//     Steward never refuses a version one of them still serves;
//   - without a label Steward can read as a Flux 2 release (CRDs copied
//     from the controllers' repositories have none), the release the Flux
//     CRDs' served versions match in the table: the oldest release every
//     installed kind matches, or, when no one release matches them all,
//     the oldest release any of them matches;
//   - without Flux CRDs (or before the first discovery), the default, 2.6.
func ClusterTarget(s *clustercache.Served) Target {
	if s == nil {
		return defaultTarget
	}
	if r, ok := labelledRelease(s.CRDAppVersions); ok {
		return Target{Release: r, Source: SourceClusterLabel}
	}
	if r, ok := servedRelease(s.Resources); ok {
		return Target{Release: r, Source: SourceServedVersions}
	}
	return defaultTarget
}

// labelledRelease is the oldest Flux release the Flux CRDs' labels name.
func labelledRelease(labels map[schema.GroupResource]string) (Release, bool) {
	var oldest Release
	found := false
	for gr, v := range labels {
		if LookupResource(gr.Group, gr.Resource) == nil {
			continue
		}
		r, err := releaseFromLabel(v)
		if err != nil {
			continue
		}
		if !found || oldest.AtLeast(r) {
			oldest, found = r, true
		}
	}
	return oldest, found
}

// releaseFromLabel reads a release label: "v2.8.0" or "2.8.1", and also a
// pre-release or build ("v2.8.0-rc.1"), which belongs to its minor
// release's APIs.
func releaseFromLabel(v string) (Release, error) {
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	return ParseRelease(v)
}

// servedRelease infers the release from the Flux kinds the cluster serves:
// each kind of the table that is served matches the releases whose CRD
// serves exactly its versions.
func servedRelease(resources map[schema.GroupResource]*clustercache.Resource) (Release, bool) {
	var common []Release // the releases every served kind matches so far
	var oldestAny Release
	anyMatch, first := false, true
	for i := range apis {
		a := &apis[i]
		res := resources[schema.GroupResource{Group: a.Group, Resource: a.Resource}]
		if res == nil {
			continue
		}
		var matches []Release
		for j := range a.Releases {
			if sameVersions(a.Releases[j].Served, res.Versions) {
				matches = append(matches, a.Releases[j].Release)
			}
		}
		if len(matches) == 0 {
			continue // served in a shape no known release has
		}
		if !anyMatch || oldestAny.AtLeast(matches[0]) {
			oldestAny, anyMatch = matches[0], true
		}
		if first {
			common, first = matches, false
			continue
		}
		common = slices.DeleteFunc(common, func(r Release) bool { return !slices.Contains(matches, r) })
	}
	switch {
	case len(common) > 0:
		return common[0], true // releases are kept oldest first
	case anyMatch:
		return oldestAny, true
	}
	return Release{}, false
}

// sameVersions reports whether two lists hold the same versions, in any
// order.
func sameVersions(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, v := range a {
		if !slices.Contains(b, v) {
			return false
		}
	}
	return true
}
