package e2e

import "syscall"

// replicaProcAttr kills an extra Steward replica when the test process dies
// without stopping it, as the harness does for its own Steward.
func replicaProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
