//go:build !unix

package ruletest

import "time"

// processCPU is unknown here: the benchmarks report no cpu-ns/op.
func processCPU() time.Duration { return 0 }
