//go:build tools

// Module helm-controller builds Flux's helm-controller from its Go module, so
// the e2e tests run the controller Flux users run, as a local process. The
// Makefile runs `go build github.com/fluxcd/helm-controller` here; this file
// only keeps that package in the module's build list.
package tools

import _ "github.com/fluxcd/helm-controller"
