//go:build !linux

package e2e

import "syscall"

// extraStewardProcAttr puts an extra Steward in its own process group; the
// test's cleanup stops it.
func extraStewardProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
