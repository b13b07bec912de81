package check

import (
	"fmt"
	"strings"
)

// writeGitHub prints GitHub Actions workflow commands (::error and
// ::warning), which the Actions runner turns into annotations on the
// files and lines of the pull request, then the text summary.
func (c *checker) writeGitHub() {
	for _, f := range c.findings {
		msg := f.object() + " (" + f.position() + "): " + f.message
		title := "steward check: " + strings.TrimSuffix(f.status, "-version") + " Flux API version"
		c.annotate(c.level(f), f.file, f.line, title, msg)
	}
	for _, p := range c.problems {
		c.annotate("error", p.file, p.line, "steward check: malformed input", p.String())
	}
	fmt.Fprintln(c.stdout, c.summary())
}

// annotate prints one workflow command; standard input has no file in the
// repository, so its annotations are not attached to one.
func (c *checker) annotate(level, file string, line int, title, msg string) {
	var props string
	if file != stdinName {
		props = "file=" + ghProperty(file) + ","
		if line > 0 {
			props += fmt.Sprintf("line=%d,", line)
		}
	}
	props += "title=" + ghProperty(title)
	fmt.Fprintf(c.stdout, "::%s %s::%s\n", level, props, ghData(msg))
}

// ghData escapes a workflow command's message the way the Actions
// toolkit does, so a newline or % cannot end or forge a command.
var ghData = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace

// ghProperty escapes a property value, where : and , are separators too.
var ghProperty = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace
