package check

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stewardhq/steward/webhooks/apimigration"
)

// FuzzCheckFile feeds arbitrary bytes to the YAML scanner: it must never
// panic, and every input either checks or is reported as an input error
// (never both silent and failed).
func FuzzCheckFile(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(fixtures, "*.yaml"))
	more, _ := filepath.Glob(filepath.Join(fixtures, "malformed", "*.yaml"))
	for _, p := range append(seeds, more...) {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: &i\n- apiVersion: v1\n  kind: List\n  items: *i\n"))
	f.Add([]byte("--- !!binary\n...\n%YAML 1.2\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var stdout, stderr bytes.Buffer
		// Every format must render whatever the scanner found.
		opts := Options{Target: apimigration.MustParseRelease("2.8"), Format: formats[len(data)%len(formats)]}
		c := &checker{opts: opts, stdout: &stdout, stderr: &stderr}
		c.checkFile("fuzz.yaml", data)
		code, err := c.finish()
		if err != nil {
			t.Fatal(err)
		}
		if code != ExitOK && code != ExitFindings && code != ExitBadInput {
			t.Fatalf("exit %d", code)
		}
		if code == ExitBadInput && stderr.Len() == 0 {
			t.Fatal("input error without a message")
		}
		_, _ = io.Copy(io.Discard, &stdout)
	})
}
