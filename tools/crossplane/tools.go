//go:build tools

// Module crossplane builds Crossplane's core from its Go module, so the e2e
// tests run the crossplane binary Crossplane users run, as a local process.
// The Makefile runs `go build` of the command here; this file only keeps
// that package in the module's build list.
package tools

import (
	_ "github.com/crossplane/crossplane/v2/cmd/crossplane"
)
