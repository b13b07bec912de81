//go:build tools

// Module helm-controller-2.7 builds Flux 2.7's helm-controller from its Go
// module, as tools/helm-controller builds Flux 2.9's, so the e2e tests
// run the controller Flux 2.7 users run, as a local process. The Makefile
// runs `go build github.com/fluxcd/helm-controller` here; this file only
// keeps that package in the module's build list.
package tools

import _ "github.com/fluxcd/helm-controller"
