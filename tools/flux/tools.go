//go:build tools

// Module flux builds Flux's kustomize-, source- and helm-controller from
// their Go modules, so the e2e tests run the controllers Flux users run, as
// local processes. The Makefile runs `go build github.com/fluxcd/<name>`
// here for each; this file only keeps those packages in the module's build
// list.
package tools

import (
	_ "github.com/fluxcd/helm-controller"
	_ "github.com/fluxcd/kustomize-controller"
	_ "github.com/fluxcd/source-controller"
)
