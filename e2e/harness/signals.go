package harness

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// handleSignals stops the Env on SIGINT or SIGTERM, then exits with status 1
// (or calls Options.OnSignal). A second signal while stopping (a repeated
// Ctrl-C, or the parent-death SIGTERM that follows when the parent got the
// first one too) kills every child at once instead of waiting for them, then
// exits; it never leaves them running. The returned function uninstalls the
// handler.
func (e *Env) handleSignals() func() {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			if !e.started.Load() {
				// envtest cannot be stopped while it starts: kill what has
				// started; the watchdog, still armed, kills anything that
				// starts later and removes the directories when this
				// process exits.
				fmt.Fprintf(os.Stderr, "harness: %v during start-up: killing kube-apiserver and etcd\n", sig)
				e.killAll()
				if e.opts.OnSignal != nil {
					e.opts.OnSignal(sig)
					return
				}
				os.Exit(1)
			}
			fmt.Fprintf(os.Stderr, "harness: %v: stopping steward, kube-apiserver and etcd\n", sig)
			go func() {
				select {
				case <-ch:
					fmt.Fprintln(os.Stderr, "harness: second signal: killing steward, kube-apiserver and etcd")
					e.killAll()
					os.Exit(1)
				case <-done:
				}
			}()
			e.Stop()
			if e.opts.OnSignal != nil {
				e.opts.OnSignal(sig)
				return
			}
			os.Exit(1)
		case <-done:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
}

// killAll sends SIGKILL to Steward, etcd and kube-apiserver without waiting
// for a graceful stop. The watchdog then removes the directories when this
// process exits.
func (e *Env) killAll() {
	e.mu.Lock()
	stewards := []*Steward{e.Steward, e.starting}
	replicas := e.replicas
	e.mu.Unlock()
	for _, s := range stewards {
		if s != nil {
			_ = s.Signal(syscall.SIGKILL)
		}
	}
	for _, r := range replicas {
		r.kill()
	}
	e.watchdog.killAll()
}
