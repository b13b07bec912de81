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

// TestRefusedFleetguardUpdateVisitsTheDocumentedFiles measures the files a
// refused fleetguard UPDATE runs code in, and holds them to the table in
// docs/architecture.md and to maxPathFiles. It runs the fleetguard test
// that sends the refusal through the server's whole HTTP handler once and
// twice, with coverage counted over ./webhooks/...: the code the second
// call runs more is what one request runs, set-up excluded.
func TestRefusedFleetguardUpdateVisitsTheDocumentedFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the webhooks twice with coverage")
	}
	var profiles [2]map[string]int
	for i := range profiles {
		out := filepath.Join(t.TempDir(), "cover.out")
		cmd := exec.Command("go", "test", "-count=1", "-covermode=count", "-coverpkg=./webhooks/...", "-coverprofile="+out,
			"-run", "^TestRefusedUpdateThroughTheServer$", "./webhooks/fleetguard/")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "STEWARD_REQUEST_PATH_CALLS="+strconv.Itoa(i+1))
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, b)
		}
		profiles[i] = coverCounts(t, out)
	}
	var path, reader []string
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
		t.Fatal("the second call ran no code of ./webhooks/...: the measurement is broken")
	}
	if len(path) > maxPathFiles {
		t.Errorf("a refused fleetguard UPDATE runs code in %d files besides the JSON reader, more than %d: %s", len(path), maxPathFiles, strings.Join(path, ", "))
	}
	rows, prose := documentedPath(t)
	if !slices.Equal(path, rows) {
		t.Errorf("docs/architecture.md's table of a refused fleetguard UPDATE names %s;\nthe update runs code in %s", strings.Join(rows, ", "), strings.Join(path, ", "))
	}
	for _, f := range reader {
		if !strings.Contains(prose, "`"+filepath.Base(f)+"`") {
			t.Errorf("the update runs the JSON reader's %s, which docs/architecture.md does not name below the table", f)
		}
	}
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

var pathRow = regexp.MustCompile("^\\| \\d+ \\| `([^`]+)` \\|")

// documentedPath returns the files the table of a refused fleetguard UPDATE
// names, sorted and once each, and the text of its section.
func documentedPath(t *testing.T) (files []string, section string) {
	t.Helper()
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "### A refused fleetguard UPDATE, file by file\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no section "A refused fleetguard UPDATE, file by file"`)
	}
	section, _, _ = strings.Cut(rest, "\n## ")
	for _, line := range strings.Split(section, "\n") {
		if m := pathRow.FindStringSubmatch(line); m != nil {
			files = append(files, m[1])
		}
	}
	slices.Sort(files)
	return slices.Compact(files), section
}
