//go:build tools

// Module kustomize-controller builds Flux's kustomize-controller from its Go module, so
// the e2e tests run the controller Flux users run, as a local process. The
// Makefile runs `go build github.com/fluxcd/kustomize-controller` here; this file
// only keeps that package in the module's build list.
package tools

import _ "github.com/fluxcd/kustomize-controller"
