package webhooks

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/webhooks/config"
)

// A rule is its package and one line in the list; what else must follow
// it is checked here, naming the missing piece: its row in README.md's
// rules table, an e2e test of it in the Makefile's E2E_CORE (the set also
// run against the oldest API server), and the Helm chart (`make generate`
// renders it from the Spec: each webhook entry, and the rule's section of
// the configuration among the chart's values).

// repoFiles are the files outside the rules' packages that must carry
// every rule.
type repoFiles struct {
	// readme is README.md.
	readme string
	// core are the tests E2E_CORE names, each with its function's source.
	core map[string]string
	// chartWebhooks is the chart's webhook configurations' template, and
	// chartValues its values.yaml.
	chartWebhooks, chartValues string
}

// readRepoFiles reads them from the repository root.
func readRepoFiles(t *testing.T, root string) repoFiles {
	t.Helper()
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	f := repoFiles{
		readme:        read("README.md"),
		chartWebhooks: read("charts/steward/templates/webhooks.yaml"),
		chartValues:   read("charts/steward/values.yaml"),
		core:          map[string]string{},
	}
	names := makeList(read("Makefile"), "E2E_CORE")
	if len(names) == 0 {
		t.Fatal("the Makefile has no E2E_CORE list")
	}
	tests := testFunctions(t, filepath.Join(root, "e2e"))
	for _, n := range names {
		f.core[n] = tests[n] // empty when ./e2e has no such test
	}
	return f
}

// makeList is the words of a Makefile variable set with := over
// backslash-continued lines.
func makeList(makefile, name string) []string {
	_, rest, ok := strings.Cut(makefile, "\n"+name+" :=")
	if !ok {
		return nil
	}
	var out []string
	for _, line := range strings.Split(rest, "\n") {
		body, more := strings.CutSuffix(strings.TrimSpace(line), "\\")
		out = append(out, strings.Fields(body)...)
		if !more {
			break
		}
	}
	return out
}

// testFunctions are the source of the Test functions of the Go package in
// dir, by name.
func testFunctions(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]string{}
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fn.Name.Name, "Test") {
				out[fn.Name.Name] = string(src[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset])
			}
		}
	}
	return out
}

// missing names what of the files does not carry the rule named name,
// whose webhook entries are webhooks.
func (f repoFiles) missing(name string, webhooks []string) []string {
	var out []string
	if row := fmt.Sprintf("| [`%s`](webhooks/%s/README.md) |", name, name); !strings.Contains(f.readme, "\n"+row) {
		out = append(out, fmt.Sprintf("README.md: the rules table has no row for %s (a line starting %q)", name, row))
	}
	tested := false
	for _, src := range f.core {
		tested = tested || strings.Contains(strings.ToLower(src), name)
	}
	if !tested {
		out = append(out, fmt.Sprintf("Makefile: E2E_CORE names no e2e test of %s (a test in ./e2e whose function names the rule)", name))
	}
	for _, wh := range webhooks {
		if !strings.Contains(f.chartWebhooks, "\n    name: "+wh+"\n") {
			out = append(out, fmt.Sprintf("charts/steward/templates/webhooks.yaml: no webhook %s (make generate renders it)", wh))
		}
	}
	if !strings.Contains(f.chartValues, "\n    "+name+":") {
		out = append(out, fmt.Sprintf("charts/steward/values.yaml: no config.rules.%s (make generate renders it)", name))
	}
	return out
}

// TestEveryRuleIsInTheReadmeTheCoreE2ESetAndTheChart checks every rule of
// the list against the files outside its package that must carry it.
func TestEveryRuleIsInTheReadmeTheCoreE2ESetAndTheChart(t *testing.T) {
	f := readRepoFiles(t, "..")
	for name, src := range f.core {
		if src == "" {
			t.Errorf("Makefile: E2E_CORE names %s, which ./e2e does not have", name)
		}
	}
	cfg := config.Defaults(Sections())
	for _, e := range list {
		var webhooks []string
		for _, wh := range e.build(e.settings(cfg), cfg).Spec().Webhooks {
			webhooks = append(webhooks, wh.Name)
		}
		if len(webhooks) == 0 {
			t.Errorf("rule %s has no webhook", e.Name)
		}
		for _, m := range f.missing(e.Name, webhooks) {
			t.Errorf("rule %s: %s", e.Name, m)
		}
	}
}

// TestAMissingPieceIsNamed: a rule that only its package and the list
// know of is reported once for each piece it lacks.
func TestAMissingPieceIsNamed(t *testing.T) {
	f := readRepoFiles(t, "..")
	got := f.missing("widgetguard", []string{"widgetguard.steward.dev"})
	want := []string{
		"README.md: the rules table has no row for widgetguard (a line starting \"| [`widgetguard`](webhooks/widgetguard/README.md) |\")",
		"Makefile: E2E_CORE names no e2e test of widgetguard (a test in ./e2e whose function names the rule)",
		"charts/steward/templates/webhooks.yaml: no webhook widgetguard.steward.dev (make generate renders it)",
		"charts/steward/values.yaml: no config.rules.widgetguard (make generate renders it)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a rule in no file (-want +got):\n%s", diff)
	}
	if got := makeList("# the list\nX := a \\\n\tb \\\n\tc\nY := d\n", "X"); !cmp.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("makeList = %v, want [a b c]", got)
	}
}
