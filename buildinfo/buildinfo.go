// Package buildinfo is which build a steward binary is: the version and
// VCS revision stamped at build time (or the release `go install` built),
// the Go version and the platform, as `steward version` prints them and
// steward_build_info reports them.
package buildinfo

import (
	"regexp"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Build is what `steward version` prints and steward_build_info labels.
type Build struct {
	Version, Revision, GoVersion, Platform string
}

// Current is the build of this binary, stamped with version and revision
// (main.version and main.revision), falling back on the VCS revision Go
// records in a binary built from a checkout.
func Current(version, revision string) Build {
	info, _ := debug.ReadBuildInfo()
	return From(version, revision, info)
}

// From is the build of a binary stamped with version and revision, whose
// Go build information is info (nil when it has none).
func From(version, revision string, info *debug.BuildInfo) Build {
	b := Build{Version: version, Revision: revision, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info == nil {
		if b.Revision == "" {
			b.Revision = "unknown"
		}
		return b
	}
	if b.Version == "devel" && releaseVersion.MatchString(info.Main.Version) && !pseudoVersion.MatchString(info.Main.Version) {
		b.Version = info.Main.Version // go install github.com/stewardhq/steward/cmd/steward@v0.2.0
	}
	if b.Revision != "" {
		return b
	}
	b.Revision = "unknown"
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			b.Revision = s.Value
		}
	}
	return b
}

// releaseVersion matches a module version that names a release (v0.2.0,
// v0.3.0-rc.1); a build in a checkout gets "(devel)" or a pseudo-version
// instead, with "+dirty" for uncommitted changes.
var (
	releaseVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
	pseudoVersion  = regexp.MustCompile(`[0-9]{14}-[0-9a-f]{12}$`)
)

// Gauge is steward_build_info: always 1, labelled with the build, so
// dashboards and alerts can tell which version each replica runs.
func Gauge(b Build) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steward_build_info",
		Help: "Steward's build: version, VCS revision and Go version; always 1.",
	}, []string{"version", "revision", "goversion"})
	g.WithLabelValues(b.Version, b.Revision, b.GoVersion).Set(1)
	return g
}
