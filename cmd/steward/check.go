package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/apimigration"
)

// Exit codes of `steward check`, so CI can tell a finding from a broken run.
const (
	// checkOK: nothing fails the check.
	checkOK = 0
	// checkFindings: an object uses a Flux API version the target release
	// removed (or, with --fail-on-deprecated, a deprecated one).
	checkFindings = 1
	// checkUsage: bad flags or configuration; nothing was checked.
	checkUsage = 2
	// checkBadInput: a path could not be read or a document could not be
	// parsed; the check is incomplete. Takes precedence over findings.
	checkBadInput = 3
)

const checkUsageText = `Usage: steward check [flags] PATH...

Checks Kubernetes YAML for Flux objects written with deprecated or removed
API versions, with the same table and decision as the apimigration rule.
PATH is a file, a directory (searched recursively for .yaml and .yml files;
hidden directories and Helm chart templates are skipped) or - for standard
input, e.g. 'kustomize build . | steward check -'. Files may hold many
documents, and List objects are looked into.

Exit status: 0 nothing removed; 1 an object uses a version removed in the
target Flux release; 2 bad flags or configuration; 3 unreadable or
malformed input (reported with file, line and document number).

Examples:
  # A GitOps repository, against the default target release:
  steward check ./clusters ./infrastructure

  # What kustomize renders, against Flux 2.8, deprecated versions too:
  kustomize build ./clusters/production | steward check --flux-version 2.8 --fail-on-deprecated -
`

// checkStdin is where "-" reads from; tests replace it.
var checkStdin io.Reader = os.Stdin

// checkOptions are the flags of `steward check`.
type checkOptions struct {
	configPath, fluxVersion string
	failOnDeprecated        bool
}

func checkFlagSet(o *checkOptions, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("steward check", flag.ContinueOnError)
	fs.SetOutput(out)
	setUsage(fs, checkUsageText)
	fs.StringVar(&o.configPath, "config", "", "Steward configuration file; its rules.apimigration.fluxVersion is the target release")
	fs.StringVar(&o.fluxVersion, "flux-version", "", "target Flux release, MAJOR.MINOR (overrides --config; default "+apimigration.DefaultFluxVersion+")")
	fs.BoolVar(&o.failOnDeprecated, "fail-on-deprecated", false, "also exit 1 for versions that are deprecated but not yet removed")
	return fs
}

// runCheck runs the apimigration decision offline over YAML files
// (`steward check PATH...`), for GitOps CI.
func runCheck(args []string, stdout, stderr io.Writer) int {
	var o checkOptions
	fs := checkFlagSet(&o, stderr)
	if helpAsked(fs, args, stdout) {
		return checkOK
	}
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return checkUsage
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "steward check: no PATH given (use - for standard input)")
		fs.Usage()
		return checkUsage
	}
	target, err := checkTarget(o.configPath, o.fluxVersion)
	if err != nil {
		fmt.Fprintf(stderr, "steward check: %v\n", err)
		return checkUsage
	}

	c := &checker{target: target, failOnDeprecated: o.failOnDeprecated, stdout: stdout, stderr: stderr}
	for _, p := range paths {
		c.checkPath(p)
	}
	return c.finish()
}

// parseInterspersed lets flags follow paths (`steward check . --flux-version
// 2.8`), which the standard flag package alone stops at; everything after
// "--" is a path.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var paths, rest []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		paths, args = append(paths, args[0]), args[1:]
	}
	return append(paths, rest...), nil
}

// checkTarget is the release to check against: --flux-version, else the
// configuration file's, else the rule's default.
func checkTarget(configPath, fluxVersion string) (apimigration.Release, error) {
	cfg := webhooks.DefaultConfig()
	if configPath != "" {
		var err error
		if cfg, err = webhooks.LoadConfig(configPath); err != nil {
			return apimigration.Release{}, err
		}
	}
	if fluxVersion == "" {
		return webhooks.SettingsOf[apimigration.Config](cfg.Rules).Target(), nil
	}
	r, err := apimigration.ParseRelease(fluxVersion)
	if err != nil {
		return apimigration.Release{}, fmt.Errorf("--flux-version %q: %w", fluxVersion, err)
	}
	return r, nil
}

// checker accumulates what the check found.
type checker struct {
	target           apimigration.Release
	failOnDeprecated bool
	stdout, stderr   io.Writer

	files, objects      int
	removed, deprecated int
	inputErrors         int
}

// report prints one object that uses an old version, compiler-style
// (file:line: severity: ...) so editors and CI annotations can jump to it.
func (c *checker) report(o manifest, f apimigration.Finding) {
	severity := "warning"
	switch f.Status {
	case apimigration.RemovedVersion:
		c.removed++
		severity = "error"
	case apimigration.DeprecatedVersion:
		c.deprecated++
		if c.failOnDeprecated {
			severity = "error"
		}
	}
	fmt.Fprintf(c.stdout, "%s:%d: %s: %s (%s): %s\n", o.file, o.line, severity, o.object(), o.position(), f.Advice())
}

// inputError prints why a file or document could not be checked.
func (c *checker) inputError(err error) {
	c.inputErrors++
	fmt.Fprintf(c.stderr, "steward check: %v\n", err)
}

// finish prints the summary and picks the exit code.
func (c *checker) finish() int {
	var parts []string
	if c.removed > 0 {
		parts = append(parts, fmt.Sprintf("%d removed", c.removed))
	}
	if c.deprecated > 0 {
		parts = append(parts, fmt.Sprintf("%d deprecated", c.deprecated))
	}
	found := "no deprecated or removed Flux API versions"
	if len(parts) > 0 {
		found = strings.Join(parts, ", ")
	}
	fmt.Fprintf(c.stdout, "steward check: %s in %s: %s (target Flux %s)\n",
		plural(c.objects, "object"), plural(c.files, "file"), found, c.target)
	if c.removed+c.deprecated > 0 {
		fmt.Fprintln(c.stdout, "steward check: change apiVersion as shown, or let `flux migrate -f <dir>` rewrite the manifests")
	}
	switch {
	case c.inputErrors > 0:
		fmt.Fprintf(c.stderr, "steward check: %s could not be checked\n", plural(c.inputErrors, "input"))
		return checkBadInput
	case c.removed > 0, c.failOnDeprecated && c.deprecated > 0:
		return checkFindings
	}
	return checkOK
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
