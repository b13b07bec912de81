package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// version and revision are stamped at build time (make build, the
// Dockerfile): -ldflags "-X main.version=v0.2.0 -X main.revision=<commit>".
// Unstamped builds report the release `go install ...@v0.2.0` built, or
// else "devel", and the VCS revision Go recorded, if any.
var (
	version  = "devel"
	revision = ""
)

// buildInfo is what `steward version` prints and steward_build_info labels.
type buildInfo struct {
	Version, Revision, GoVersion, Platform string
}

// currentBuild reads the stamped version and revision, falling back on the
// VCS revision Go records in a binary built from a checkout.
func currentBuild() buildInfo {
	info, _ := debug.ReadBuildInfo()
	return buildFrom(version, revision, info)
}

// buildFrom is the build of a binary stamped with version and revision,
// whose Go build information is info (nil when it has none).
func buildFrom(version, revision string, info *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: version, Revision: revision, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
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

const versionUsageText = `Usage: steward version

Prints the version and VCS revision stamped at build, the Go version and the
platform; 'steward --version' does the same. steward_build_info reports the
same build to Prometheus.

Examples:
  steward version
  kubectl -n steward-system exec deploy/steward -- /steward version
`

func versionFlagSet(out io.Writer) *flag.FlagSet {
	return newFlagSet("version", versionUsageText, out)
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := versionFlagSet(stderr)
	if stop, code := parseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "version", unexpectedArguments(fs.Args()))
	}
	b := currentBuild()
	fmt.Fprintf(stdout, "steward %s\nrevision: %s\ngo: %s\nplatform: %s\n", b.Version, b.Revision, b.GoVersion, b.Platform)
	return exitOK
}

// buildInfoGauge is steward_build_info: always 1, labelled with the build,
// so dashboards and alerts can tell which version each replica runs.
func buildInfoGauge(b buildInfo) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steward_build_info",
		Help: "Steward's build: version, VCS revision and Go version; always 1.",
	}, []string{"version", "revision", "goversion"})
	g.WithLabelValues(b.Version, b.Revision, b.GoVersion).Set(1)
	return g
}
