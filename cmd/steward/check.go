package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/stewardhq/steward/check"
	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/apimigration"
	"github.com/stewardhq/steward/webhooks/config"
)

const checkUsageText = `Usage: steward check [flags] PATH...

Checks Kubernetes YAML for Flux objects written with deprecated, removed or
unknown API versions, with the same table and decision as the apimigration
rule. The target is the newest Flux release Steward knows unless
--flux-version or --config says otherwise, so CI learns what the next
upgrade breaks.

PATH is a file, a directory (searched recursively for .yaml and .yml files;
hidden directories and Helm chart templates are skipped) or - for standard
input, e.g. 'kustomize build . | steward check -'. Files may hold many
documents, and List objects are looked into. A document that does not
parse is reported and the rest of the file is still checked. --exclude
globs are matched against each path relative to its PATH argument and
against its base name.

Output (-o): text (file:line: level: ...), json (one document: findings,
inputErrors, summary), sarif (SARIF 2.1.0, for GitHub code scanning) or
github (::error/::warning workflow commands, annotations in GitHub Actions).

Exit status: 0 nothing fails; 1 an object uses a version removed in the
target Flux release, or a version of a Flux kind no release serves (a typo
such as v1beta3); 2 bad flags or arguments; 3 a --config file that does
not read or validate, or unreadable or malformed input (reported with
file, line and document number; it takes precedence over 1).

Examples:
  # A GitOps repository, against the newest Flux release Steward knows:
  steward check ./clusters ./infrastructure

  # What kustomize renders, against Flux 2.8, deprecated versions too:
  kustomize build ./clusters/production | steward check --flux-version 2.8 --fail-on-deprecated -

  # In GitHub Actions: annotations on the pull request, SOPS files skipped:
  steward check -o github --exclude '*.enc.yaml' ./clusters

  # SARIF for github/codeql-action/upload-sarif:
  steward check -o sarif . > steward.sarif
`

// checkStdin is where "-" reads from; tests replace it.
var checkStdin io.Reader = os.Stdin

// checkOptions are the flags of `steward check`.
type checkOptions struct {
	configPath, fluxVersion string
	failOnDeprecated        bool
	output                  string
	exclude                 []string
}

func checkFlagSet(o *checkOptions, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("steward check", flag.ContinueOnError)
	fs.SetOutput(out)
	setUsage(fs, checkUsageText)
	fs.StringVar(&o.configPath, "config", "", "Steward configuration file; its rules.apimigration.fluxVersion is the target release")
	fs.StringVar(&o.fluxVersion, "flux-version", "", "target Flux release, MAJOR.MINOR (overrides --config; default "+apimigration.NewestRelease().String()+", the newest release Steward knows)")
	fs.BoolVar(&o.failOnDeprecated, "fail-on-deprecated", false, "also exit 1 for versions that are deprecated but not yet removed")
	o.output = "text"
	format := func(v string) error {
		if formats := check.Formats(); !slices.Contains(formats, v) {
			return fmt.Errorf("want one of %s", strings.Join(formats, ", "))
		}
		o.output = v
		return nil
	}
	fs.Func("o", "short for --output `format`", format)
	fs.Func("output", "output `format`: text (default), json, sarif (code scanning) or github (Actions annotations)", format)
	fs.Func("exclude", "skip files and directories whose path relative to PATH, or whose base name, matches this `glob` (repeatable)", func(v string) error {
		if _, err := path.Match(v, ""); err != nil {
			return err
		}
		o.exclude = append(o.exclude, v)
		return nil
	})
	return fs
}

// runCheck runs the apimigration decision offline over YAML files
// (`steward check PATH...`), for GitOps CI: the flags fill check.Options.
func runCheck(args []string, stdout, stderr io.Writer) int {
	var o checkOptions
	fs := checkFlagSet(&o, stderr)
	if helpAsked(fs, args, stdout) {
		return check.ExitOK
	}
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(stderr, "check", err)
	}
	if len(paths) == 0 {
		return usageError(stderr, "check", errors.New("no PATH given (use - for standard input)"))
	}
	// A configuration file that does not load is check.ExitBadInput
	// (exitConfig), a --flux-version Steward cannot check against a usage
	// error.
	var cfg *config.Config
	if o.configPath != "" {
		loaded, err := config.Load(o.configPath, webhooks.Sections())
		if err != nil {
			return fail(stderr, "check", exitConfig, err)
		}
		cfg = &loaded
	}
	target, err := check.Target(cfg, o.fluxVersion)
	if err != nil {
		return usageError(stderr, "check", err)
	}
	code, err := check.Run(check.Options{
		Target:           target,
		FailOnDeprecated: o.failOnDeprecated,
		Format:           o.output,
		Exclude:          o.exclude,
		Stdin:            checkStdin,
		Version:          currentBuild().Version,
	}, paths, stdout, stderr)
	if err != nil {
		printError(stderr, "check", err)
	}
	return code
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
		if err := parseQuietly(fs, args); err != nil {
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
