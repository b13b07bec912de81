package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// processes are programs the harness runs beside the API server for one
// Lifetime (Flux's controllers; Argo CD's and the Redis it caches in;
// kube-controller-manager),
// each with its log file and its own home directory under dir, stopped in
// reverse start order when the Lifetime ends.
type processes struct {
	dir   string
	procs []*process
}

// process is one running program.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	exitErr error
}

// processSpec says how to start a program and how to tell it is ready.
type processSpec struct {
	name, binary string
	args, env    []string
	// readyURL answers 200 once the program is ready; readyAddr, when
	// readyURL is empty, accepts connections once it is.
	readyURL, readyAddr string
	// readyTLS verifies an https readyURL.
	readyTLS *tls.Config
}

// newProcesses is an empty group whose files live under a new directory
// of the Env's, prefixed prefix, stopped when lt ends, with the logs
// written to lt's log if it failed.
func (e *Env) newProcesses(lt Lifetime, prefix string) (*processes, error) {
	dir, err := os.MkdirTemp(e.dir, prefix)
	if err != nil {
		return nil, fmt.Errorf("creating the %s directory: %w", strings.TrimSuffix(prefix, "-"), err)
	}
	g := &processes{dir: dir}
	lt.Cleanup(func() {
		g.stop(lt)
		if lt.Failed() {
			for _, p := range g.procs {
				lt.Logf("%s log (last lines of %s):\n%s", p.name, p.logPath, logTail(p.logPath, 80))
			}
		}
	})
	return g, nil
}

// start starts s, its output in <dir>/<name>.log, and waits until it is
// ready; an error carries the log's last lines.
func (g *processes) start(ctx context.Context, s processSpec) error {
	p := &process{name: s.name, logPath: filepath.Join(g.dir, s.name+".log"), exited: make(chan struct{})}
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the %s log: %w", s.name, err)
	}
	defer log.Close() // the child holds its own descriptor
	home := filepath.Join(g.dir, s.name)
	if err := os.Mkdir(home, 0o700); err != nil {
		return err
	}
	p.cmd = exec.Command(s.binary, s.args...)
	// argv[0] names a path under the Env's work directory, so the
	// watchdog finds the process by its command line as it finds the
	// Env's others; a multi-call binary (Argo CD's) also reads which
	// program it is from argv[0]'s base name.
	p.cmd.Args[0] = filepath.Join(home, s.name)
	p.cmd.Dir = home
	p.cmd.Env = append(append(os.Environ(), "HOME="+home), s.env...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = childProcAttr()
	fmt.Fprintf(log, "=== %s %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(p.cmd.Args, " "))
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.name, err)
	}
	g.procs = append(g.procs, p)
	go func() {
		p.exitErr = p.cmd.Wait()
		close(p.exited)
	}()
	exitErr := func() error { return p.exitErr }
	if s.readyURL != "" {
		err = waitOK(ctx, s.name, s.readyURL, s.readyTLS, ReadyTimeout, p.exited, exitErr)
	} else {
		err = waitListening(ctx, s.name, s.readyAddr, ReadyTimeout, p.exited, exitErr)
	}
	if err != nil {
		return fmt.Errorf("%w\n--- %s log (last lines) ---\n%s", err, s.name, logTail(p.logPath, 40))
	}
	return nil
}

// waitListening dials addr until it accepts a connection, within
// timeout, or until exited closes.
func waitListening(ctx context.Context, what, addr string, timeout time.Duration, exited <-chan struct{}, exitErr func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before it was ready: %v", what, exitErr())
		case <-ctx.Done():
			return fmt.Errorf("%s did not listen on %s within %s: %v", what, addr, timeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop ends the programs in reverse start order: SIGTERM, then SIGKILL
// after StopTimeout. One that exited before it was stopped fails lt: it
// crashed under the test.
func (g *processes) stop(lt Lifetime) {
	for i := len(g.procs) - 1; i >= 0; i-- {
		p := g.procs[i]
		select {
		case <-p.exited:
			lt.Errorf("%s exited while the test ran: %v", p.name, p.exitErr)
			continue
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(StopTimeout):
			_ = p.cmd.Process.Kill()
			<-p.exited
			lt.Logf("%s did not stop within %s of SIGTERM and was killed", p.name, StopTimeout)
		}
	}
}

// log returns everything the program name has written so far.
func (g *processes) log(name string) string {
	for _, p := range g.procs {
		if p.name == name {
			data, err := os.ReadFile(p.logPath)
			if err != nil {
				return fmt.Sprintf("(reading %s: %v)", p.logPath, err)
			}
			return string(data)
		}
	}
	return fmt.Sprintf("(no program %s)", name)
}
