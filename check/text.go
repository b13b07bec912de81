package check

import (
	"fmt"
	"strings"

	"github.com/stewardhq/steward/webhooks/apimigration"
)

// writeText prints each finding compiler-style (file:line: level: ...) so
// editors and CI logs can jump to it, then a summary.
func (c *checker) writeText() {
	for _, f := range c.findings {
		fmt.Fprintf(c.stdout, "%s:%d: %s: %s (%s): %s\n", f.file, f.line, c.level(f), f.object(), f.position(), f.message)
	}
	fmt.Fprintln(c.stdout, c.summary())
	switch {
	case len(c.findings) == 0:
	case c.opts.Target.AtLeast(apimigration.FluxMigrateSince()):
		fmt.Fprintln(c.stdout, "steward check: change apiVersion as shown, or let `flux migrate -f <dir>` rewrite the manifests")
	default: // `flux migrate` first ships in Flux 2.7
		fmt.Fprintln(c.stdout, "steward check: change apiVersion as shown")
	}
}

// summary is the one-line count the text and GitHub formats end with.
func (c *checker) summary() string {
	var parts []string
	if n := c.count(findRemoved); n > 0 {
		parts = append(parts, fmt.Sprintf("%d removed", n))
	}
	if n := c.count(findDeprecated); n > 0 {
		parts = append(parts, fmt.Sprintf("%d deprecated", n))
	}
	if n := c.count(findUnknown); n > 0 {
		parts = append(parts, plural(n, "unknown version"))
	}
	found := "no deprecated or removed Flux API versions"
	if len(parts) > 0 {
		found = strings.Join(parts, ", ")
	}
	return fmt.Sprintf("steward check: %s in %s: %s (target Flux %s)",
		plural(c.objects, "object"), plural(c.files, "file"), found, c.opts.Target)
}
