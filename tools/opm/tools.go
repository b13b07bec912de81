//go:build tools

// Module opm builds operator-registry's opm from its Go module, so the e2e
// tests serve a file-based catalog to OLM's catalog operator the way a
// catalog image's `opm serve` does, as a local process. The Makefile runs
// `go build github.com/operator-framework/operator-registry/cmd/opm` here;
// this file only keeps that package in the module's build list.
package tools

import _ "github.com/operator-framework/operator-registry/cmd/opm"
