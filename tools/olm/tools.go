//go:build tools

// Module olm builds OLM's catalog operator from its Go module, so the e2e
// tests run the catalog operator OLM users run, as a local process. The
// Makefile runs `go build
// github.com/operator-framework/operator-lifecycle-manager/cmd/catalog`
// here; this file only keeps that package in the module's build list.
package tools

import _ "github.com/operator-framework/operator-lifecycle-manager/cmd/catalog"
