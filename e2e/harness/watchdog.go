package harness

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
)

// watchdogScript collects directories, one a line, from its stdin until the
// stdin closes, which happens when the harness process dies however it dies.
// It then kills every process whose command line contains $MARK (the Env's
// work directory, which etcd's data directory, the API server's audit log
// and Steward's kubeconfig all live in) and removes the directories. A
// harness that stops normally kills the watchdog first.
const watchdogScript = `while IFS= read -r d; do set -- "$@" "$d"; done
for f in $(grep -laF -- "$MARK" /proc/[0-9]*/cmdline 2>/dev/null); do
	pid=${f#/proc/}
	pid=${pid%/cmdline}
	[ "$pid" = "$$" ] || kill -KILL "$pid" 2>/dev/null
done
sleep 1
rm -rf -- "$@"`

// watchdog ends etcd, kube-apiserver and Steward if the harness dies
// without stopping them: envtest starts them in their own process groups
// with no parent-death signal, so they would otherwise run on forever.
type watchdog struct {
	mark  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startWatchdog arms a watchdog for the processes whose command line
// contains mark and for dirs. It is started before the processes it watches,
// so that none can escape it.
func startWatchdog(mark string, dirs ...string) (*watchdog, error) {
	w := &watchdog{mark: mark}
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		// Without /proc there is nothing to find; Stop and the signal
		// handler still end the processes.
		return w, nil
	}
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "steward-e2e-watchdog")
	cmd.Env = append(os.Environ(), "MARK="+mark)
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
	w.cmd, w.stdin = cmd, stdin
	for _, d := range dirs {
		w.removeOnDeath(d)
	}
	return w, nil
}

// removeOnDeath adds a directory for the watchdog to remove.
func (w *watchdog) removeOnDeath(dir string) {
	if w == nil || w.stdin == nil || dir == "" {
		return
	}
	_, _ = io.WriteString(w.stdin, dir+"\n")
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

// killAll kills the watched processes now, as the watchdog would.
func (w *watchdog) killAll() {
	if w == nil {
		return
	}
	pids, _ := processesWith(w.mark)
	for _, pid := range pids {
		if w.cmd != nil && pid == w.cmd.Process.Pid {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// processesWith lists the processes other than this one whose command line
// contains mark, reading /proc.
func processesWith(mark string) ([]int, error) {
	paths, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no /proc: %v", err)
	}
	self := os.Getpid()
	var pids []int
	for _, path := range paths {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil || pid == self {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue // the process has exited
		}
		if bytes.Contains(data, []byte(mark)) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
