//go:build tools

// Module actionlint builds actionlint from its Go module, so `make verify`
// can check Steward's GitHub Actions workflows (.github/workflows) with the
// version it pins, and needs no prebuilt binary. The Makefile runs
// `go build github.com/rhysd/actionlint/cmd/actionlint` here; this file only
// keeps that package in the module's build list.
package tools

import _ "github.com/rhysd/actionlint/cmd/actionlint"
