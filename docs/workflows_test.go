package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// usesLine is a step's or job's `uses:`; pinnedUses is one pinned by a full
// commit SHA, with the release it is in a comment (as Dependabot keeps it).
var (
	usesLine   = regexp.MustCompile(`^\s*(?:-\s+)?uses:\s*(\S+)(.*)$`)
	pinnedUses = regexp.MustCompile(`^[\w.-]+/[\w.-]+(?:/[\w./-]+)?@[0-9a-f]{40}$`)
	tagComment = regexp.MustCompile(`^\s+# v\d+(?:\.\d+)*$`)
)

func readWorkflows(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("../.github/workflows/*.y*ml")
	if err != nil {
		t.Fatal(err)
	}
	workflows := map[string]string{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		workflows[filepath.Base(p)] = string(data)
	}
	for _, name := range []string{"test.yml", "release.yml"} {
		if _, ok := workflows[name]; !ok {
			t.Fatalf(".github/workflows/%s is missing", name)
		}
	}
	return workflows
}

// TestWorkflowsPinActionsByCommit keeps every action the workflows run
// pinned by a full commit SHA, with its release in a comment: a tag can be
// moved to other code, a commit cannot.
func TestWorkflowsPinActionsByCommit(t *testing.T) {
	for name, text := range readWorkflows(t) {
		for i, line := range strings.Split(text, "\n") {
			m := usesLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			if !pinnedUses.MatchString(m[1]) || !tagComment.MatchString(m[2]) {
				t.Errorf("%s:%d: %q: pin the action by its full commit SHA, with the release in a comment (uses: owner/repo@<sha> # v1.2.3)", name, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestWorkflowsRunTheRepositorysScripts keeps CI on GitHub the same as
// .ci/run, and the release's syft the version make release-snapshot builds
// (tools/syft, which Dependabot bumps; the workflow's input it does not).
func TestWorkflowsRunTheRepositorysScripts(t *testing.T) {
	workflows := readWorkflows(t)
	if !regexp.MustCompile(`(?m)^\s+run: bash \.ci/run$`).MatchString(workflows["test.yml"]) {
		t.Error("test.yml does not run `bash .ci/run`")
	}
	release := workflows["release.yml"]
	for _, want := range []string{"run: make release", "run: make chart-push", "id-token: write"} {
		if !strings.Contains(release, want) {
			t.Errorf("release.yml does not say %q", want)
		}
	}
	mod, err := os.ReadFile("../tools/syft/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	pinned := regexp.MustCompile(`(?m)^require github\.com/anchore/syft (v\S+)$`).FindSubmatch(mod)
	used := regexp.MustCompile(`(?m)^\s+syft-version: (\S+)$`).FindStringSubmatch(release)
	switch {
	case pinned == nil:
		t.Error("tools/syft/go.mod does not require github.com/anchore/syft")
	case used == nil:
		t.Error("release.yml does not set syft-version")
	case used[1] != string(pinned[1]):
		t.Errorf("release.yml installs syft %s, tools/syft pins %s: keep them the same", used[1], pinned[1])
	}
}
