//go:build !linux

package harness

import "syscall"

// childProcAttr puts a child in its own process group. Without Linux's
// Pdeathsig the watchdog alone ends orphans.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// dieWithParent has no portable equivalent outside Linux.
func dieWithParent() error { return nil }
