package bench

import (
	"strings"
	"testing"
)

func TestSpliceReplacesOnlyItsSection(t *testing.T) {
	fresh := splice("", "scale", "scale figures\n")
	if !strings.HasPrefix(fresh, "# Benchmarks\n\n<!-- scale:begin ") || !strings.HasSuffix(fresh, "scale figures\n<!-- scale:end -->\n") {
		t.Fatalf("a new report is %q", fresh)
	}
	both := splice(fresh, "load", "load figures")
	report := both + "\n## Notes\n\nhand-written\n"
	got := splice(splice(report, "load", "new load figures"), "scale", "new scale figures")
	want := strings.Replace(strings.Replace(report, "load figures", "new load figures", 1), "scale figures", "new scale figures", 1)
	if got != want {
		t.Errorf("splicing changed more than the sections:\n%s\nwant:\n%s", got, want)
	}
	if again := splice(got, "load", "new load figures"); again != got {
		t.Errorf("splicing the same section again changed the report:\n%s", again)
	}
	if !strings.Contains(both, "scale figures\n<!-- scale:end -->\n\n<!-- load:begin ") {
		t.Errorf("a report without the section does not get it at its end:\n%s", both)
	}
}
