//go:build tools

// Module syft builds Anchore's syft from its Go module, so a release
// snapshot (make release-snapshot) writes the same SBOMs as a release
// (.goreleaser.yaml, sboms) with the version it pins, and needs no prebuilt
// binary. The Makefile runs `go build github.com/anchore/syft/cmd/syft`
// here; this file only keeps that package in the module's build list.
package tools

import _ "github.com/anchore/syft/cmd/syft"
