//go:build tools

// Module fleet builds Fleet's controller and agent from their Go module, so
// the e2e tests run the fleetcontroller and fleet-agent Fleet users run, as
// local processes. The Makefile runs `go build` of both commands here; this
// file only keeps those packages in the module's build list.
package tools

import (
	_ "github.com/rancher/fleet/cmd/fleetagent"
	_ "github.com/rancher/fleet/cmd/fleetcontroller"
)
