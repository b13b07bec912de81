package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stewardhq/steward/webhooks/apimigration"
)

// FuzzCheckFile feeds arbitrary bytes to the YAML scanner of `steward
// check`: it must never panic, and every input either checks or is
// reported as an input error (never both silent and failed).
func FuzzCheckFile(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/check/*.yaml")
	more, _ := filepath.Glob("testdata/check/malformed/*.yaml")
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
		c := &checker{target: apimigration.MustParseRelease("2.8"), stdout: &stdout, stderr: &stderr}
		c.checkFile("fuzz.yaml", data)
		// Every format must render whatever the scanner found.
		code := c.finish(checkFormats[len(data)%len(checkFormats)])
		if code != checkOK && code != checkFindings && code != checkBadInput {
			t.Fatalf("exit %d", code)
		}
		if code == checkBadInput && stderr.Len() == 0 {
			t.Fatal("input error without a message")
		}
		_, _ = io.Copy(io.Discard, &stdout)
	})
}
