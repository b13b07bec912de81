// Command steward is Steward's one binary: `serve` runs the admission webhook
// server, `manifests` renders the install manifests, `check` runs the rules
// offline over YAML files for GitOps CI, `version` says which build it is.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `Usage: steward <command> [flags]

Commands:
  serve       run the admission webhook server
  manifests   render the install manifests (kustomize base and overlays)
  check       check YAML files for Flux API versions that are deprecated or removed
  version     print the version, VCS revision, Go version and platform

Run 'steward <command> -h' for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(args[1:], stderr)
	case "manifests":
		return runManifests(args[1:], stdout, stderr)
	case "check":
		return runCheck(args[1:], stdout, stderr)
	case "version", "--version":
		return runVersion(stdout)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "steward: unknown command %q\n\n%s", args[0], usage)
	return 2
}
