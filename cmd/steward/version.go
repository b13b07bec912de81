package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// version and revision are stamped at build time (make build, the
// Dockerfile): -ldflags "-X main.version=v0.2.0 -X main.revision=<commit>".
// Unstamped builds report "devel" and the VCS revision Go recorded, if any.
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
	b := buildInfo{Version: version, Revision: revision, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if b.Revision != "" {
		return b
	}
	b.Revision = "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				b.Revision = s.Value
			}
		}
	}
	return b
}

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
