package harness

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// makeVars reads the Makefile's simple assignments (NAME := value), with
// their continuation lines joined.
func makeVars(t *testing.T) map[string]string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		name, value, ok := strings.Cut(line, ":=")
		if name = strings.TrimSpace(name); ok && name != "" && !strings.ContainsAny(name, " \t$#") {
			vars[name] = strings.Join(strings.Fields(value), " ")
		}
	}
	return vars
}

// minor returns "1.30" for "v1.30.14".
func minor(t *testing.T, version string) string {
	t.Helper()
	m := regexp.MustCompile(`^v(1\.\d+)\.\d+$`).FindStringSubmatch(version)
	if m == nil {
		t.Fatalf("%q is not a Kubernetes release version", version)
	}
	return m[1]
}

// TestE2ECoreNamesTestsOfTheSuite fails when the Makefile's E2E_CORE, the
// tests `make e2e-oldest` runs against the oldest supported API server,
// names a test the e2e package does not have: go test -run with a name
// that matches nothing passes without running it.
func TestE2ECoreNamesTestsOfTheSuite(t *testing.T) {
	core := strings.Fields(makeVars(t)["E2E_CORE"])
	if len(core) == 0 {
		t.Fatal("the Makefile defines no E2E_CORE")
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "e2e", "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		parsed, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range parsed.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" {
				tests[fn.Name.Name] = true
			}
		}
	}
	for _, name := range core {
		if !tests[name] {
			t.Errorf("E2E_CORE names %s, which is no test of package e2e", name)
		}
	}
}

// TestKubeVersionsMatchTheirToolModules keeps the versions the Makefile
// builds and names its cache directories by in step with the tool modules
// it builds them from, and the chart's kubeVersion and README.md's
// statement of the supported minors with the oldest and newest tested, and
// the admission code bench/registrations measures with the newest.
func TestKubeVersionsMatchTheirToolModules(t *testing.T) {
	vars := makeVars(t)
	newest, oldest := vars["KUBE_VERSION"], vars["KUBE_OLDEST_VERSION"]
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	read := func(path string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for version, module := range map[string]string{
		newest: "tools/kube-apiserver",
		oldest: "tools/kube-apiserver-" + minor(t, oldest),
	} {
		gomod := read(module + "/go.mod")
		for _, want := range []string{
			"\tk8s.io/kubernetes " + version + "\n",
			"\tk8s.io/component-base v0" + strings.TrimPrefix(version, "v1") + "\n",
		} {
			if !strings.Contains(gomod, want) {
				t.Errorf("%s/go.mod does not require %q: the Makefile builds kube-apiserver %s from it", module, strings.TrimSpace(want), version)
			}
		}
	}
	// bench/registrations measures the registrations with the API server's
	// own admission code: the newest API server's.
	if want := "\tk8s.io/apiserver v0" + strings.TrimPrefix(newest, "v1") + "\n"; !strings.Contains(read("bench/registrations/go.mod"), want) {
		t.Errorf("bench/registrations/go.mod does not require %q: it measures the admission code of kube-apiserver %s", strings.TrimSpace(want), newest)
	}
	if want := `kubeVersion: ">=` + minor(t, oldest) + `.0-0"`; !strings.Contains(read("charts/steward/Chart.yaml"), want) {
		t.Errorf("charts/steward/Chart.yaml does not say %s: the oldest supported minor is %s's", want, oldest)
	}
	readme := strings.Join(strings.Fields(read("README.md")), " ")
	if want := "Kubernetes " + minor(t, oldest) + " to " + minor(t, newest) + ", tested against " + strings.TrimPrefix(oldest, "v") + " and " + strings.TrimPrefix(newest, "v"); !strings.Contains(readme, want) {
		t.Errorf("README.md does not say %q", want)
	}
}
