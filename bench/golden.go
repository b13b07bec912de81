package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Golden compares got with testdata/<name>.golden, failing t at the first
// line that differs, or rewrites the file when update is set (a test's
// -update flag, after an intended change): a change to how the
// benchmarks seed and write must not change what they seed and say.
func Golden(t testing.TB, name, got string, update bool) {
	t.Helper()
	GoldenFile(t, filepath.Join("testdata", name+".golden"), got, update)
}

// GoldenFile is Golden for a file at any path: a generated page of the
// docs, say.
func GoldenFile(t testing.TB, golden, got string, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v: run the test with -update to write it", err)
	}
	g, w := strings.Split(got, "\n"), strings.Split(string(data), "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			t.Errorf("the run differs from %s at line %d (run the test with -update to rewrite it):\n got: %s\nwant: %s", golden, i+1, a, b)
			return
		}
	}
}
