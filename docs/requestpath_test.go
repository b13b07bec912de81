package docs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// maxPathFiles is how many files of Steward a refused fleetguard UPDATE may
// run code in, from HTTP to the answer, besides the object package's
// private JSON reader: a newcomer follows a request through that many.
// The seventh is the GitOps engine's reading of the tool's own record of
// Git's fields (webhooks/internal/gitops/fields.go).
const maxPathFiles = 7

// guardPaths are the guards whose refused request docs/architecture.md
// follows file by file, in its section "A refused fleetguard UPDATE, file
// by file". fleetguard's path is the section's numbered table. fluxguard's
// and argocdguard's each have a table of their own, under the heading
// table, naming the files their request runs code in besides the shared
// ones: the numbered table's files outside fleetguard and the engine (the
// serving layer's, the view's and rule/request.go).
var guardPaths = []struct {
	// guard is the package under webhooks/ whose
	// TestRefusedUpdateThroughTheServer sends the refusal.
	guard string
	// table is the heading of the guard's own table; "" for the numbered
	// table.
	table string
	// max is how many files the request may run code in, shared ones
	// included, besides the JSON reader.
	max int
}{
	{guard: "fleetguard", max: maxPathFiles},
	{guard: "fluxguard", table: "#### fluxguard's refused image change", max: 13},
	{guard: "argocdguard", table: "#### argocdguard's refused image change", max: 14},
}

// TestRefusedUpdatesVisitTheDocumentedFiles measures, for each of
// guardPaths, the files its refused request runs code in, and holds them
// to the guard's table in docs/architecture.md and to its max. It runs the
// guard's test that sends the refusal through the server's whole HTTP
// handler once and twice, with coverage counted over ./webhooks/...: the
// code the second call runs more is what one request runs, set-up
// excluded.
func TestRefusedUpdatesVisitTheDocumentedFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the webhooks twice a guard with coverage")
	}
	doc := readPathSection(t)
	rows, prose := doc.numbered, doc.section
	var shared []string
	for _, f := range rows {
		if !strings.HasPrefix(f, "webhooks/fleetguard/") && !strings.HasPrefix(f, "webhooks/internal/gitops/") {
			shared = append(shared, f)
		}
	}
	for _, g := range guardPaths {
		t.Run(g.guard, func(t *testing.T) {
			t.Parallel()
			path, reader := measurePath(t, g.guard)
			if len(path) > g.max {
				t.Errorf("a refused %s UPDATE runs code in %d files besides the JSON reader, more than %d: %s", g.guard, len(path), g.max, strings.Join(path, ", "))
			}
			if g.table == "" {
				if !slices.Equal(path, rows) {
					t.Errorf("docs/architecture.md's table of a refused %s UPDATE names %s;\nthe update runs code in %s", g.guard, strings.Join(rows, ", "), strings.Join(path, ", "))
				}
			} else {
				own := doc.table(t, g.table)
				for _, f := range shared {
					if !slices.Contains(path, f) {
						t.Errorf("a refused %s UPDATE runs no code in %s, which docs/architecture.md says every guard's request shares", g.guard, f)
					}
				}
				rest := slices.DeleteFunc(slices.Clone(path), func(f string) bool { return slices.Contains(shared, f) })
				if !slices.Equal(rest, own) {
					t.Errorf("docs/architecture.md's table under %q names %s;\nbesides the shared %s, the update runs code in %s", strings.TrimLeft(g.table, "# "), strings.Join(own, ", "), strings.Join(shared, ", "), strings.Join(rest, ", "))
				}
			}
			for _, f := range reader {
				if !strings.Contains(prose, "`"+filepath.Base(f)+"`") {
					t.Errorf("the update runs the JSON reader's %s, which docs/architecture.md does not name below the table", f)
				}
			}
		})
	}
}

// measurePath runs webhooks/<guard>'s TestRefusedUpdateThroughTheServer
// with one call and with two, and returns the files of ./webhooks/... the
// second call runs more code in, sorted and once each: the JSON reader's
// apart, the test's own driver left out.
func measurePath(t *testing.T, guard string) (path, reader []string) {
	t.Helper()
	var profiles [2]map[string]int
	for i := range profiles {
		out := filepath.Join(t.TempDir(), "cover.out")
		cmd := exec.Command("go", "test", "-count=1", "-covermode=count", "-coverpkg=./webhooks/...", "-coverprofile="+out,
			"-run", "^TestRefusedUpdateThroughTheServer$", "./webhooks/"+guard+"/")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "STEWARD_REQUEST_PATH_CALLS="+strconv.Itoa(i+1))
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, b)
		}
		profiles[i] = coverCounts(t, out)
	}
	for block, n := range profiles[1] {
		if n <= profiles[0][block] {
			continue
		}
		file := strings.TrimPrefix(block[:strings.LastIndex(block, ":")], "github.com/stewardhq/steward/")
		if strings.HasPrefix(file, "webhooks/internal/ruletest/") {
			continue // the test's own driver, which sends the request
		}
		if strings.HasPrefix(file, "webhooks/object/raw") {
			reader = append(reader, file)
		} else {
			path = append(path, file)
		}
	}
	slices.Sort(path)
	path = slices.Compact(path)
	slices.Sort(reader)
	reader = slices.Compact(reader)
	if len(path) == 0 {
		t.Fatalf("the second call ran no code of ./webhooks/... for %s: the measurement is broken", guard)
	}
	return path, reader
}

// coverCounts reads a coverage profile of mode count: each block's count.
func coverCounts(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts := map[string]int{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) != 3 {
			continue // the mode line
		}
		n, err := strconv.Atoi(fields[2])
		if err != nil {
			t.Fatalf("%s: %q: %v", path, s.Text(), err)
		}
		counts[fields[0]] += n
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return counts
}

var (
	pathRow     = regexp.MustCompile("^\\| \\d+ \\| `([^`]+)` \\|")
	ownPathRow  = regexp.MustCompile("^\\| `([^`]+)` \\|")
	pathHeading = "### A refused fleetguard UPDATE, file by file\n"
)

// pathSection is docs/architecture.md's section of a refused fleetguard
// UPDATE: its text, and the files its numbered table names, sorted and
// once each.
type pathSection struct {
	section  string
	numbered []string
}

// readPathSection reads the section of a refused fleetguard UPDATE. The
// numbered table is the one before the section's first guard heading.
func readPathSection(t *testing.T) pathSection {
	t.Helper()
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), pathHeading)
	if !ok {
		t.Fatal(`docs/architecture.md has no section "A refused fleetguard UPDATE, file by file"`)
	}
	var s pathSection
	s.section, _, _ = strings.Cut(rest, "\n## ")
	fleet, _, _ := strings.Cut(s.section, "\n#### ")
	s.numbered = tableFiles(fleet, pathRow)
	return s
}

// table returns the files the table under heading names, sorted and once
// each; it fails the test when the section has no such heading or the
// heading no table.
func (s pathSection) table(t *testing.T, heading string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(s.section, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/architecture.md's section of a refused fleetguard UPDATE has no heading %q", heading)
	}
	rest, _, _ = strings.Cut(rest, "\n#### ")
	files := tableFiles(rest, ownPathRow)
	if len(files) == 0 {
		t.Fatalf("docs/architecture.md has no table of files under %q", heading)
	}
	return files
}

// tableFiles returns the files the rows of text that row matches name,
// sorted and once each.
func tableFiles(text string, row *regexp.Regexp) []string {
	var files []string
	for _, line := range strings.Split(text, "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			files = append(files, m[1])
		}
	}
	slices.Sort(files)
	return slices.Compact(files)
}
