//go:build tools

// Module function-patch-and-transform builds Crossplane's
// patch-and-transform composition function from its Go module, so the e2e
// tests compose a real XR's resources through a real function, run as a
// local gRPC server. The Makefile runs `go build` of the module's main
// package here; this file only keeps it in the module's build list.
package tools

import (
	_ "github.com/crossplane-contrib/function-patch-and-transform"
)
