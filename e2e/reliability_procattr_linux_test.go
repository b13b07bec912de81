package e2e

import "syscall"

// extraStewardProcAttr kills an extra Steward when the test process dies
// without stopping it, as the harness does for its own Steward.
func extraStewardProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
