package check

import (
	"fmt"
	"strings"

	"github.com/stewardhq/steward/webhooks/apimigration"
)

// Finding kinds, as every output format names them.
const (
	// findRemoved: the target release no longer serves the version.
	findRemoved = "removed"
	// findDeprecated: still served, removed in a later release.
	findDeprecated = "deprecated"
	// findUnknown: a version of a Flux kind that no Flux release in
	// Steward's table serves (a typo such as v1beta3, or v3). The API
	// server would refuse it as "no matches for kind", so it fails the
	// check like a removed version.
	findUnknown = "unknown-version"
)

// finding is one object that fails, or may later fail, to apply.
type finding struct {
	manifest
	apiVersion  string
	status      string // findRemoved, findDeprecated or findUnknown
	message     string
	replaceWith string // the group/version to write instead
}

// classify decides what the object's apiVersion means under the target,
// and whether there is anything to report.
func (c *checker) classify(m manifest, apiVersion string) (finding, bool) {
	group, version := splitAPIVersion(apiVersion)
	f := finding{manifest: m, apiVersion: apiVersion}
	d := apimigration.Classify(group, m.kind, version, c.opts.Target)
	switch {
	case d.Status == apimigration.RemovedVersion:
		f.status = findRemoved
	case d.Status == apimigration.DeprecatedVersion:
		f.status = findDeprecated
	case d.API != nil && !d.API.Knows(version):
		f.status = findUnknown
		f.replaceWith = d.To()
		f.message = fmt.Sprintf("%s is not a version of %s that Flux serves (known: %s): change apiVersion to %s",
			apiVersion, m.kind, strings.Join(d.API.Versions(), ", "), d.To())
		return f, true
	default:
		return f, false
	}
	f.replaceWith = d.To()
	f.message = d.Advice()
	return f, true
}

// failing reports whether the finding fails the check (exit 1).
func (c *checker) failing(f finding) bool {
	return f.status != findDeprecated || c.opts.FailOnDeprecated
}

// level is "error" for findings that fail the check, else "warning"; the
// text, SARIF and GitHub formats all use these words.
func (c *checker) level(f finding) string {
	if c.failing(f) {
		return "error"
	}
	return "warning"
}

// count returns how many findings are of kind.
func (c *checker) count(kind string) int {
	n := 0
	for _, f := range c.findings {
		if f.status == kind {
			n++
		}
	}
	return n
}

// inputProblem is a file or document that could not be checked.
type inputProblem struct {
	file     string
	line     int // 0 when unknown
	document int // 0 when the whole file could not be read
	item     []int
	msg      string
}

// String formats the problem compiler-style: file:line: document N [item
// M]: what is wrong. Read errors already name the path.
func (p inputProblem) String() string {
	if p.document == 0 {
		return p.msg
	}
	pos := manifest{document: p.document, item: p.item}.position()
	if p.line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", p.file, p.line, pos, p.msg)
	}
	return fmt.Sprintf("%s: %s: %s", p.file, pos, p.msg)
}
