//go:build tools

// Module argocd builds Argo CD's multi-call binary from its Go module, so the
// e2e tests run the application controller and repo server Argo CD users
// run, as local processes. The Makefile runs `go build
// github.com/argoproj/argo-cd/v3/cmd` here; this file only keeps that
// package in the module's build list.
package tools

import _ "github.com/argoproj/argo-cd/v3/cmd"
