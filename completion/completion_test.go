package completion

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

func TestWriteNamesEveryCommandAndFlagForEveryShell(t *testing.T) {
	fs := flag.NewFlagSet("steward check", flag.ContinueOnError)
	fs.String("config", "", "configuration file; the defaults when empty")
	fs.Bool("fail-on-deprecated", false, "also fail on deprecated versions")
	cmds := []Command{{Name: "check", Summary: "check YAML files", Flags: Flags(fs), Files: true}}
	if f := cmds[0].Flags; len(f) != 2 || !f[0].TakesValue || f[1].TakesValue {
		t.Fatalf("Flags = %+v, want --config taking a value and --fail-on-deprecated standing alone", f)
	}
	for _, shell := range Shells() {
		var out bytes.Buffer
		if !Write(&out, shell, cmds) {
			t.Fatalf("Write(%s) = false", shell)
		}
		for _, want := range []string{"check", "config", "fail-on-deprecated"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the %s script does not name %s:\n%s", shell, want, out.String())
			}
		}
	}
	if Write(&bytes.Buffer{}, "powershell", cmds) {
		t.Error("Write(powershell) = true, want false: no script for it")
	}
}
