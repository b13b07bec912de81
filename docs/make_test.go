package docs

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// phonyTargets are the targets the Makefile declares .PHONY: every entry
// point a developer types.
func phonyTargets(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, ".PHONY:"); ok {
			targets = append(targets, strings.Fields(rest)...)
		}
	}
	if len(targets) == 0 {
		t.Fatal("the Makefile declares no .PHONY targets")
	}
	return targets
}

// helpLine is one target of `make help`: two spaces, the name, its
// description.
var helpLine = regexp.MustCompile(`^  (\S+)(?:\s+(.*))?$`)

// TestMakeHelpDescribesEveryTarget runs `make help` and fails when a
// target declared .PHONY is missing from it or has no description: every
// target's line needs a "## description" comment.
func TestMakeHelpDescribesEveryTarget(t *testing.T) {
	cmd := exec.Command("make", "--no-print-directory", "help")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	described := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if m := helpLine.FindStringSubmatch(line); m != nil {
			described[m[1]] = strings.TrimSpace(m[2])
		}
	}
	for _, target := range phonyTargets(t) {
		desc, ok := described[target]
		switch {
		case !ok:
			t.Errorf("make help does not list %s: give its line in the Makefile a \"## description\" comment", target)
		case desc == "":
			t.Errorf("make help lists %s without a description", target)
		}
	}
	if t.Failed() {
		t.Logf("make help printed:\n%s", out)
	}
}

// TestMakeWithoutATargetBuilds keeps help from becoming the default goal:
// `make` alone builds bin/steward.
func TestMakeWithoutATargetBuilds(t *testing.T) {
	cmd := exec.Command("make", "--no-print-directory", "-n")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "-o bin/steward ./cmd/steward") {
		t.Errorf("make without a target would not build bin/steward; it would run:\n%s", out)
	}
}
