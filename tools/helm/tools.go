//go:build tools

// Module helm builds Helm's CLI from its Go module, so the tests can lint
// and render Steward's chart with the tool installers use, and need no
// prebuilt binary. The Makefile runs `go build helm.sh/helm/v3/cmd/helm`
// here; this file only keeps that package in the module's build list.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
