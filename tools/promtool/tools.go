//go:build tools

// Module promtool builds Prometheus' promtool from its Go module, so the
// tests can check and unit-test Steward's alerting rules with the tool
// Prometheus itself uses, and need no prebuilt binary. `make promtool`
// runs `go build github.com/prometheus/prometheus/cmd/promtool` here; this
// file only keeps that package in the module's build list.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
