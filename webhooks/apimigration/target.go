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
	// Release is the release decided against: when the cluster's CRDs
	// cannot tell which of several releases is installed, the oldest of
	// them, which refuses least.
	Release Release
	// Upto is the newest release the cluster's CRDs may belong to, when
	// they cannot tell it from Release; zero when they can.
	Upto   Release
	Source Source
}

// Name is the release, or the releases the cluster may run: "2.9",
// "2.9 or 2.10", "2.8 to 2.10". The metric, the log and the messages use
// it, so nobody is told a release the cluster may not run.
func (t Target) Name() string {
	if t.Upto == (Release{}) || t.Upto == t.Release {
		return t.Release.String()
	}
	i, j := slices.Index(releases, t.Release), slices.Index(releases, t.Upto)
	if i >= 0 && j == i+1 {
		return t.Release.String() + " or " + t.Upto.String()
	}
	return t.Release.String() + " to " + t.Upto.String()
}

// String reads "2.8 (cluster-label)" or "2.8 or 2.9 (served-versions)".
func (t Target) String() string { return t.Name() + " (" + string(t.Source) + ")" }

// defaultTarget is the target before anything is known of the cluster, and
// when it has no Flux CRDs.
var defaultTarget = Target{Release: MustParseRelease(DefaultFluxVersion), Source: SourceDefault}

// ClusterTarget chooses the target release from what the cluster cache
// last saw and, when given, the installed Flux CRDs themselves (crds, by
// group and resource; see readShapes), for a configuration that pins none:
//
//   - the release in the app.kubernetes.io/version label of the Flux CRDs
//     (those of the kinds in the table), as `flux install` and the
//     release's install.yaml set it ("v2.8.0"); when the CRDs disagree, in
//     the middle of an upgrade or with one left behind, the oldest, so
//     Steward never refuses a version one of them still serves;
//   - without a label Steward can read as a Flux 2 release (CRDs copied
//     from the controllers' repositories have none), the releases the Flux
//     CRDs match in the table: first by the versions they serve (the
//     releases every installed kind matches, or, when no one release
//     matches them all, the oldest release any of them matches), then by
//     what the CRDs themselves carry, the versions they mark deprecated and
//     the fields a release added to their schemas (addedFields). What is
//     still left is a range: decided against its oldest release, and
//     named whole ("2.8 to 2.10") wherever the target is shown;
//   - without Flux CRDs (or before the first discovery), the default, 2.6.
func ClusterTarget(s *clustercache.Served, crds map[schema.GroupResource]*CRDShape) Target {
	if s == nil {
		return defaultTarget
	}
	if r, ok := labelledRelease(s.CRDAppVersions); ok {
		return Target{Release: r, Source: SourceClusterLabel}
	}
	candidates := servedReleases(s.Resources)
	if len(candidates) == 0 {
		return defaultTarget
	}
	if narrowed := fitting(candidates, crds); len(narrowed) > 0 {
		candidates = narrowed
	}
	t := Target{Release: candidates[0], Source: SourceServedVersions}
	if len(candidates) > 1 {
		t.Upto = candidates[len(candidates)-1]
	}
	return t
}

// fitting keeps the candidate releases every installed CRD of crds fits
// (CRDShape.fits). Kinds whose CRD was not read narrow nothing.
func fitting(candidates []Release, crds map[schema.GroupResource]*CRDShape) []Release {
	var out []Release
	for _, r := range candidates {
		ok := true
		for i := range apis {
			a := &apis[i]
			if c := crds[schema.GroupResource{Group: a.Group, Resource: a.Resource}]; c != nil && !c.fits(a, r) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// hasLabel reports whether ClusterTarget would take the release from the
// CRDs' label, so reading the CRDs themselves can be skipped.
func hasLabel(s *clustercache.Served) bool {
	_, ok := labelledRelease(s.CRDAppVersions)
	return ok
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

// servedReleases infers the releases from the Flux kinds the cluster
// serves: each kind of the table that is served matches the releases whose
// CRD serves exactly its versions. It returns the releases every served
// kind matches, oldest first, or when none, the oldest release any kind
// matches (CRDs of different releases, mid-upgrade), or nothing when no
// kind matches a release.
func servedReleases(resources map[schema.GroupResource]*clustercache.Resource) []Release {
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
		return common // releases are kept oldest first
	case anyMatch:
		return []Release{oldestAny}
	}
	return nil
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
