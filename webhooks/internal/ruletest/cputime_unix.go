//go:build unix

package ruletest

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used, in user and system
// mode, every thread's (the collector's workers included).
func processCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
