//go:build tools

// Module olm builds OLM's catalog operator and operator-registry's opm from
// their Go modules, so the e2e tests run the catalog operator OLM users
// run, and serve it a file-based catalog the way a catalog image's `opm
// serve` does, as local processes. The Makefile runs `go build` of
// github.com/operator-framework/operator-lifecycle-manager/cmd/catalog and
// github.com/operator-framework/operator-registry/cmd/opm here; this file
// only keeps those packages in the module's build list.
package tools

import (
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/catalog"
	_ "github.com/operator-framework/operator-registry/cmd/opm"
)
