package harness

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// childProcAttr puts a child in its own process group, so a terminal's
// Ctrl-C reaches only the harness (which then stops the child in order), and
// kills it when the harness dies without stopping it.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// dieWithParent asks the kernel for SIGTERM when the process that started
// this one (go test, go run, make) dies, so that the signal handler stops
// etcd, kube-apiserver and Steward instead of leaving them behind.
func dieWithParent() error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGTERM), 0, 0, 0); err != nil {
		return fmt.Errorf("setting the parent-death signal: %w", err)
	}
	return nil
}
