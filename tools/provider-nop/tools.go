//go:build tools

// Module provider-nop builds Crossplane's no-op provider from its Go module,
// so the e2e tests have real managed resources that a real provider
// reconciles, with no cloud behind them. The Makefile runs `go build` of
// its command here; this file only keeps that package in the module's
// build list.
package tools

import (
	_ "github.com/crossplane-contrib/provider-nop/cmd/provider"
)
