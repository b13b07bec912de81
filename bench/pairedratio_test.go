package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPairedRatio runs make bench-compare's pairing of rounds on two
// sides' results: each round's head against the base round before it, by
// CPU time where both report it, by wall time otherwise.
func TestPairedRatio(t *testing.T) {
	awk, err := exec.LookPath("awk")
	if err != nil {
		t.Skip("no awk on the PATH")
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := write("base.txt", strings.Join([]string{
		"BenchmarkRefused-2 20000 30000 ns/op 20000 cpu-ns/op 3568 B/op 32 allocs/op",
		"BenchmarkOld-2 20000 1000 ns/op",
		"BenchmarkRefused-2 20000 90000 ns/op 22000 cpu-ns/op 3568 B/op 32 allocs/op",
		"BenchmarkRefused-2 20000 31000 ns/op 21000 cpu-ns/op 3568 B/op 32 allocs/op",
	}, "\n")+"\n")
	head := write("head.txt", strings.Join([]string{
		"BenchmarkRefused-2 20000 33000 ns/op 22000 cpu-ns/op 3568 B/op 32 allocs/op",
		"BenchmarkOld-2 20000 1500 ns/op 900 cpu-ns/op",
		// A round the machine slowed: wall time trebles, CPU time does not.
		"BenchmarkRefused-2 20000 99000 ns/op 24200 cpu-ns/op 3568 B/op 32 allocs/op",
		"BenchmarkRefused-2 20000 31000 ns/op 25200 cpu-ns/op 3568 B/op 32 allocs/op",
		"BenchmarkOnlyHead-2 20000 1 ns/op",
	}, "\n")+"\n")
	out, err := exec.Command(awk, "-f", "pairedratio.awk", base, head).CombinedOutput()
	if err != nil {
		t.Fatalf("awk: %v\n%s", err, out)
	}
	var got [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n")[1:] {
		got = append(got, strings.Fields(line))
	}
	want := [][]string{
		{"BenchmarkRefused-2", "1.100", "1.100-1.200", "3", "21000", "24200", "cpu-ns/op"},
		{"BenchmarkOld-2", "1.500", "1.500-1.500", "1", "1000", "1500", "ns/op"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paired ratios (-want +got):\n%s", diff)
	}
}
