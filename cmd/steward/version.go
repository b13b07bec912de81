package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/stewardhq/steward/buildinfo"
)

// version and revision are stamped at build time (make build, the
// Dockerfile): -ldflags "-X main.version=v0.2.0 -X main.revision=<commit>".
// Unstamped builds report the release `go install ...@v0.2.0` built, or
// else "devel", and the VCS revision Go recorded, if any (buildinfo).
var (
	version  = "devel"
	revision = ""
)

// currentBuild is this binary's build, as stamped.
func currentBuild() buildinfo.Build {
	return buildinfo.Current(version, revision)
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
