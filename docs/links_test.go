package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// maxReadmeLines is how long README.md may grow: it says what Steward is
// and points into docs/, which holds the rest.
const maxReadmeLines = 300

// checkedFiles are the Markdown files whose relative links must resolve,
// as paths from the repository root: README.md, every page under docs/,
// the rules' READMEs and the other guides kept beside the code.
func checkedFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.md", "docs/*.md", "webhooks/*/README.md", "certs/README.md", "e2e/crds/README.md"} {
		matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			rel, err := filepath.Rel(root, m)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, filepath.ToSlash(rel))
		}
	}
	return files
}

func TestEveryRelativeLinkResolves(t *testing.T) {
	files := checkedFiles(t, "..")
	if !slices.Contains(files, "README.md") || !slices.Contains(files, "docs/architecture.md") {
		t.Fatalf("the files to check were not found: %v", files)
	}
	for _, problem := range brokenLinks("..", files) {
		t.Error(problem)
	}
}

func TestReadmeStaysShort(t *testing.T) {
	if problem := tooLong("..", "README.md", maxReadmeLines); problem != "" {
		t.Error(problem)
	}
}

// TestReadmeLinksEveryPage keeps every page under docs/ reachable from the
// README, where a newcomer starts.
func TestReadmeLinksEveryPage(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, l := range links(t, "../README.md") {
		path, _, _ := strings.Cut(l.target, "#")
		linked[path] = true
	}
	for _, p := range pages {
		if !linked["docs/"+p] {
			t.Errorf("README.md does not link docs/%s", p)
		}
	}
}

// TestTheCheckFindsBrokenLinks proves the checks above can fail: a missing
// file, a missing anchor in the same file and in another, a link inside
// inline code (ignored), and a README over its limit.
func TestTheCheckFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Title\n\n## The rules\n\n"+
		"[ok](docs/a.md#flags-of-steward-serve) [ok](#the-rules) [ok](docs/a.md) [ok](https://example.com/#x)\n"+
		"[gone](docs/missing.md) [no anchor](#nowhere) [no anchor there](docs/a.md#recovery-runbook)\n"+
		"`[in code](docs/missing.md)`\n\n```sh\n# not a heading\n[in a block](docs/missing.md)\n```\n")
	write("docs/a.md", "# A\n\n## Flags of `steward serve`\n\n[back](../README.md#the-rules) [up](../README.md#not-a-heading)\n")
	got := brokenLinks(root, []string{"README.md", "docs/a.md"})
	want := []string{
		"README.md:6: docs/missing.md: no such file",
		"README.md:6: #nowhere: README.md has no heading with this anchor",
		"README.md:6: docs/a.md#recovery-runbook: docs/a.md has no heading with this anchor",
		"docs/a.md:5: ../README.md#not-a-heading: README.md has no heading with this anchor",
	}
	if !slices.Equal(got, want) {
		t.Errorf("brokenLinks found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if tooLong(root, "README.md", 300) != "" {
		t.Error("a short README was reported too long")
	}
	if tooLong(root, "README.md", 5) == "" {
		t.Error("a README over its limit was not reported")
	}
}

// tooLong says how far file is over max lines, or "" when it is not.
func tooLong(root, file string, max int) string {
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return err.Error()
	}
	if n := strings.Count(string(data), "\n"); n > max {
		return fmt.Sprintf("%s has %d lines, at most %d: move the detail into a page under docs/", file, n, max)
	}
	return ""
}

// brokenLinks returns, for each file (a path from root), the relative
// links whose file does not exist or whose #anchor names no heading.
func brokenLinks(root string, files []string) []string {
	var problems []string
	anchorsOf := map[string]map[string]bool{}
	for _, file := range files {
		ls, err := readLinks(filepath.Join(root, file))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, l := range ls {
			path, anchor, _ := strings.Cut(l.target, "#")
			target := file // a bare #anchor is in the same file
			if path != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
				if strings.HasPrefix(target, "../") {
					problems = append(problems, fmt.Sprintf("%s:%d: %s: outside the repository", file, l.line, l.target))
					continue
				}
				if _, err := os.Stat(filepath.Join(root, target)); err != nil {
					problems = append(problems, fmt.Sprintf("%s:%d: %s: no such file", file, l.line, l.target))
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			anchors, ok := anchorsOf[target]
			if !ok {
				anchors, err = readAnchors(filepath.Join(root, target))
				if err != nil {
					problems = append(problems, err.Error())
					continue
				}
				anchorsOf[target] = anchors
			}
			if !anchors[anchor] {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: %s has no heading with this anchor", file, l.line, l.target, target))
			}
		}
	}
	return problems
}

type link struct {
	line   int
	target string
}

func links(t *testing.T, path string) []link {
	t.Helper()
	ls, err := readLinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an
	// optional title after the target.
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// referenceLink matches a link reference definition: [label]: target.
	referenceLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	codeSpan      = regexp.MustCompile("`+[^`]*`+")
	scheme        = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// readLinks returns the relative links of a Markdown file, outside code
// blocks and code spans.
func readLinks(path string) ([]link, error) {
	var out []link
	err := eachProseLine(path, func(n int, line string) {
		line = codeSpan.ReplaceAllString(line, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := referenceLink.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if target == "" || scheme.MatchString(target) {
				continue
			}
			out = append(out, link{line: n, target: target})
		}
	})
	return out, err
}

var heading = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)

// readAnchors returns the anchors GitHub gives a file's headings.
func readAnchors(path string) (map[string]bool, error) {
	anchors := map[string]bool{}
	seen := map[string]int{}
	err := eachProseLine(path, func(_ int, line string) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	})
	return anchors, err
}

var linkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's anchor for a heading: its text in lower case, without
// punctuation, spaces turned into hyphens.
func slug(h string) string {
	h = linkText.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// eachProseLine calls fn with each line of a Markdown file that is not in
// a fenced code block, numbered from 1.
func eachProseLine(path string, fn func(n int, line string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	fence := ""
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			continue
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = ""
			continue
		case fence != "":
			continue
		}
		fn(n, line)
	}
	return s.Err()
}
