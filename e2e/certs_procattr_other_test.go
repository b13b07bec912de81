//go:build !linux

package e2e

import "syscall"

// replicaProcAttr puts an extra Steward replica in its own process group;
// without Linux's Pdeathsig, t.Cleanup alone stops it.
func replicaProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
