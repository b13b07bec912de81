package harness

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// watchdogScript waits until its stdin closes, which happens when the
// harness process dies however it dies, then kills the process groups named
// in $PGIDS and removes the directories given as arguments. A harness that
// stops normally kills the watchdog first.
const watchdogScript = `read -r _ ; for g in $PGIDS; do kill -KILL "-$g" "$g" 2>/dev/null; done; sleep 1; rm -rf -- "$@"`

// watchdog ends etcd and kube-apiserver if the harness dies without
// stopping them: envtest starts them in their own process groups with no
// parent-death signal, so they would otherwise run on forever.
type watchdog struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	pgids []int
}

// startWatchdog finds the envtest processes (children of this process named
// etcd or kube-apiserver) and arms a watchdog for them and for dirs.
func startWatchdog(te *envtest.Environment, dirs ...string) (*watchdog, error) {
	pgids, err := childrenNamed(os.Getpid(), "etcd", "kube-apiserver")
	if err != nil {
		// Without /proc there is nothing to watch; Stop and the signal
		// handler still end the processes.
		return &watchdog{}, nil
	}
	if api := te.ControlPlane.APIServer; api != nil && api.CertDir != "" {
		dirs = append(dirs, api.CertDir)
	}
	if etcd := te.ControlPlane.Etcd; etcd != nil && etcd.DataDir != "" {
		dirs = append(dirs, etcd.DataDir)
	}
	ids := make([]string, len(pgids))
	for i, p := range pgids {
		ids[i] = strconv.Itoa(p)
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", watchdogScript, "steward-e2e-watchdog"}, dirs...)...)
	cmd.Env = append(os.Environ(), "PGIDS="+strings.Join(ids, " "))
	// Its own process group: a terminal's Ctrl-C must not end the watchdog
	// before the harness has stopped what it watches. No Pdeathsig: it
	// must outlive the harness.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("starting the process watchdog: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the process watchdog: %w", err)
	}
	return &watchdog{cmd: cmd, stdin: stdin, pgids: pgids}, nil
}

// disarm ends the watchdog without letting it act.
func (w *watchdog) disarm() {
	if w == nil || w.cmd == nil {
		return
	}
	_ = w.cmd.Process.Kill()
	_ = w.cmd.Wait()
	_ = w.stdin.Close()
	w.cmd = nil
}

// killAll kills the watched process groups now; Stop uses it when envtest
// could not stop them.
func (w *watchdog) killAll() {
	if w == nil {
		return
	}
	for _, p := range w.pgids {
		_ = syscall.Kill(-p, syscall.SIGKILL)
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// childrenNamed lists the children of parent whose command name is one of
// names, reading /proc.
func childrenNamed(parent int, names ...string) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return nil, fmt.Errorf("no /proc: %v", err)
	}
	var pids []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // the process has exited
		}
		pid, comm, ppid, ok := parseStat(data)
		if !ok || ppid != parent {
			continue
		}
		for _, n := range names {
			if comm == n {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

// parseStat reads pid, comm and ppid from /proc/<pid>/stat, whose comm field
// is parenthesised and may itself contain spaces and parentheses.
func parseStat(data []byte) (pid int, comm string, ppid int, ok bool) {
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return 0, "", 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data[:open])))
	if err != nil {
		return 0, "", 0, false
	}
	fields := strings.Fields(string(data[end+1:]))
	if len(fields) < 2 {
		return 0, "", 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	if err != nil {
		return 0, "", 0, false
	}
	return pid, string(data[open+1 : end]), ppid, true
}
