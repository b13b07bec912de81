package docs

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/stewardhq/steward/"

// TestImportTableMatchesTheCode holds docs/architecture.md's import table
// ("The same, as text") to what `go list` reports of Steward's packages
// (their code, not their tests): each row's imports are exactly the
// package's own imports of Steward, and every package that imports one of
// Steward's has a row, except the rule packages (one row speaks for them
// all) and the test helpers (packages named *test).
func TestImportTableMatchesTheCode(t *testing.T) {
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	table := importTable(t, string(data))
	actual := stewardImports(t)

	// The rule packages are what the rule list imports besides the
	// packages it has a row for.
	rules := map[string]bool{}
	for _, imp := range actual["webhooks"] {
		if _, ok := table[imp]; !ok {
			rules[imp] = true
		}
	}
	for pkg, row := range table {
		got, ok := actual[pkg]
		if !ok {
			t.Errorf("the import table has a row for %s, which is no package of Steward's", pkg)
			continue
		}
		var want []string
		for _, imp := range got {
			if !(row.everyRule && rules[imp]) {
				want = append(want, imp)
			}
		}
		if !slices.Equal(row.imports, want) {
			t.Errorf("the import table says %s imports %v; its code imports %v", pkg, row.imports, want)
		}
	}
	for pkg, imports := range actual {
		if _, ok := table[pkg]; ok || len(imports) == 0 || rules[pkg] || strings.HasSuffix(pkg, "test") || pkg == "docs" || strings.HasPrefix(pkg, "e2e/") && pkg != "e2e/harness" {
			continue
		}
		t.Errorf("%s imports %v and has no row in docs/architecture.md's import table", pkg, imports)
	}
}

// importRow is one row of the import table.
type importRow struct {
	imports []string
	// everyRule is true when the row says the package imports "every rule
	// package" besides those it names.
	everyRule bool
}

// importTable reads the import table's rows whose first cell names
// packages (the rule packages' row names none), by package.
func importTable(t *testing.T, doc string) map[string]importRow {
	t.Helper()
	_, after, ok := strings.Cut(doc, "| package | imports (Steward's own packages) |")
	if !ok {
		t.Fatal("docs/architecture.md has no import table")
	}
	code := regexp.MustCompile("`([^`]+)`")
	rows := map[string]importRow{}
	for _, line := range strings.Split(after, "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		// What a cell says in brackets explains; it names no import.
		left, _, _ := strings.Cut(cells[1], "(")
		right, _, _ := strings.Cut(cells[2], "(")
		var row importRow
		row.everyRule = strings.Contains(right, "every rule package")
		for _, m := range code.FindAllStringSubmatch(right, -1) {
			row.imports = append(row.imports, m[1])
		}
		slices.Sort(row.imports)
		for _, m := range code.FindAllStringSubmatch(left, -1) {
			rows[m[1]] = row
		}
	}
	if len(rows) == 0 {
		t.Fatal("docs/architecture.md's import table has no rows")
	}
	return rows
}

// stewardImports is, for each of Steward's packages, the packages of
// Steward its non-test code imports, sorted, without the module's path.
func stewardImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		imports := []string{}
		for _, imp := range fields[1:] {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				imports = append(imports, rest)
			}
		}
		slices.Sort(imports)
		pkgs[pkg] = imports
	}
	return pkgs
}
