package harness

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// handleSignals stops the Env on SIGINT or SIGTERM, then exits with status 1
// (or calls Options.OnSignal). A second signal while stopping exits at once;
// the watchdog and Pdeathsig then end the children. The returned function
// uninstalls the handler.
func (e *Env) handleSignals() func() {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			fmt.Fprintf(os.Stderr, "harness: %v: stopping steward, kube-apiserver and etcd\n", sig)
			go func() {
				select {
				case <-ch:
					fmt.Fprintln(os.Stderr, "harness: second signal: exiting without waiting")
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
