//go:build tools

// Module goreleaser builds GoReleaser from its Go module, so `make verify`
// can check Steward's release configuration (.goreleaser.yaml) with the
// version releases are cut with, and needs no prebuilt binary. The Makefile
// runs `go build github.com/goreleaser/goreleaser/v2` here; this file only
// keeps that package in the module's build list.
package tools

import _ "github.com/goreleaser/goreleaser/v2"
