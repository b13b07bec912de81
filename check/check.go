// Package check finds Flux objects written with API versions that a Flux
// release deprecates or removes, or that no release serves, in Kubernetes
// YAML: the offline form of Steward's apimigration rule, with the same
// table and decision. It is what `steward check` runs, for GitOps CI.
//
// Run reads files, directory trees and standard input, scans every YAML
// document (and the items of List objects), and writes the findings as
// text, JSON, SARIF 2.1.0 or GitHub Actions workflow commands. Its result
// is an exit code: ExitOK, ExitFindings or ExitBadInput.
package check

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/stewardhq/steward/webhooks/apimigration"
	"github.com/stewardhq/steward/webhooks/config"
)

// Exit codes of a check, so CI can tell a finding from a broken run.
const (
	// ExitOK means nothing fails the check.
	ExitOK = 0
	// ExitFindings means an object uses a Flux API version the target
	// release removed, or one no release serves (or, with
	// Options.FailOnDeprecated, a deprecated one).
	ExitFindings = 1
	// ExitUsage means the options were invalid, so nothing was checked.
	ExitUsage = 2
	// ExitBadInput means a path could not be read or a document could not
	// be parsed, so the check is incomplete. It takes precedence over
	// ExitFindings.
	ExitBadInput = 3
)

// formats are the output formats, the default first.
var formats = []string{"text", "json", "sarif", "github"}

// Formats returns the names of the output formats Options.Format takes:
// text (the default), json, sarif and github.
func Formats() []string { return slices.Clone(formats) }

// Options are the settings of a check, the ones the flags of `steward
// check` fill.
type Options struct {
	// Target is the Flux release to check against. The zero Release means
	// the newest release Steward knows (apimigration.NewestRelease). A
	// release newer than that is checked as the newest one; ParseTarget
	// refuses such a release when reading one a user wrote.
	Target apimigration.Release
	// FailOnDeprecated makes versions that are deprecated but not yet
	// removed fail the check too.
	FailOnDeprecated bool
	// Format is the output format, one of Formats; empty means text.
	Format string
	// Exclude lists path.Match globs of files and directories to skip,
	// matched against each path relative to its argument to Run and
	// against its base name.
	Exclude []string
	// Stdin is what the path "-" reads; nil means os.Stdin.
	Stdin io.Reader
	// Version is the Steward version the SARIF output names as its tool's.
	Version string
}

// ParseTarget reads a Flux release as a user writes it ("2.8", "v2.8.1")
// and refuses one newer than the newest release Steward knows: what a later
// release removes is not in Steward's table, so a check against it would
// pass what that release breaks.
func ParseTarget(s string) (apimigration.Release, error) {
	r, err := apimigration.ParseKnownRelease(s)
	if newer := (*apimigration.NewerReleaseError)(nil); errors.As(err, &newer) {
		return apimigration.Release{}, fmt.Errorf("%w: upgrade Steward to check against %s", err, newer.Release)
	}
	return r, err
}

// Target is the release to check against: fluxVersion (ParseTarget), else
// the one cfg's apimigration settings name (what the server it configures
// enforces; cfg is nil without a configuration file), else the newest
// release Steward knows, so CI learns what the next upgrade breaks rather
// than what the server's cautious default refuses. An error is a
// fluxVersion Steward cannot check against, and names --flux-version.
func Target(cfg *config.Config, fluxVersion string) (apimigration.Release, error) {
	switch {
	case fluxVersion != "":
		r, err := ParseTarget(fluxVersion)
		if err != nil {
			return apimigration.Release{}, fmt.Errorf("--flux-version %q: %w", fluxVersion, err)
		}
		return r, nil
	case cfg != nil:
		return config.SettingsOf[apimigration.Config](cfg.Rules).Target(), nil
	}
	return apimigration.NewestRelease(), nil
}

// Run checks the files and directories at paths, "-" being Options.Stdin.
// Directories are searched recursively for .yaml and .yml files; hidden
// directories and the templates of Helm charts are skipped. It writes the
// findings to stdout in the chosen format, and each file or document that
// could not be checked to stderr as soon as it is met, and returns the
// exit code. It returns ExitUsage and an error, having checked nothing,
// when the options are invalid, and ExitBadInput and an error when the
// output could not be written.
func Run(opts Options, paths []string, stdout, stderr io.Writer) (int, error) {
	if opts.Format == "" {
		opts.Format = formats[0]
	}
	if !slices.Contains(formats, opts.Format) {
		return ExitUsage, fmt.Errorf("output format %q: want one of %s", opts.Format, strings.Join(formats, ", "))
	}
	for _, g := range opts.Exclude {
		if _, err := path.Match(g, ""); err != nil {
			return ExitUsage, fmt.Errorf("exclude %q: %w", g, err)
		}
	}
	if opts.Target == (apimigration.Release{}) {
		opts.Target = apimigration.NewestRelease()
	}
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	c := &checker{opts: opts, stdout: stdout, stderr: stderr}
	for _, p := range paths {
		c.checkPath(p)
	}
	return c.finish()
}

// checker accumulates what the check found; the chosen format prints it
// at the end.
type checker struct {
	opts           Options
	stdout, stderr io.Writer

	files, objects int
	findings       []finding
	problems       []inputProblem
}

// report records one object that uses a removed, deprecated or unknown
// version.
func (c *checker) report(f finding) {
	c.findings = append(c.findings, f)
}

// inputError records why a file or document could not be checked, and
// tells stderr at once, whatever the output format, so the CI log shows it.
func (c *checker) inputError(p inputProblem) {
	c.problems = append(c.problems, p)
	fmt.Fprintf(c.stderr, "steward check: %s\n", p)
}

// exitCode: input problems take precedence over findings, as the check is
// incomplete.
func (c *checker) exitCode() int {
	if len(c.problems) > 0 {
		return ExitBadInput
	}
	for _, f := range c.findings {
		if c.failing(f) {
			return ExitFindings
		}
	}
	return ExitOK
}

// finish prints the findings in the chosen format and picks the exit code.
func (c *checker) finish() (int, error) {
	code := c.exitCode()
	var err error
	switch c.opts.Format {
	case "json":
		err = c.writeJSON(code)
	case "sarif":
		err = c.writeSARIF()
	case "github":
		c.writeGitHub()
	default:
		c.writeText()
	}
	if err != nil {
		return ExitBadInput, fmt.Errorf("writing %s: %w", c.opts.Format, err)
	}
	if len(c.problems) > 0 {
		fmt.Fprintf(c.stderr, "steward check: %s could not be checked\n", plural(len(c.problems), "input"))
	}
	return code, nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
