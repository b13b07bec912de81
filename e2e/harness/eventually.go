package harness

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// pollInterval is how often Eventually and Poll retry.
const pollInterval = 100 * time.Millisecond

// Eventually retries f until it returns nil, failing the test with f's last
// error after timeout. Use it for what becomes true shortly after a write:
// a webhook configuration a test changed reaching the API server's admission
// plugins (about a second), a counter after an asynchronous request, an
// audit event.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	if err := Poll(context.Background(), timeout, f); err != nil {
		t.Fatal(err)
	}
}

// Poll retries f until it returns nil, ctx ends or timeout passes, and then
// returns f's last error.
func Poll(ctx context.Context, timeout time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still failing after %s: %w", timeout, err)
		case <-time.After(pollInterval):
		}
	}
}

// LogOnFailure prints the tail of Steward's log (and of
// kube-controller-manager's, when it runs) when t fails, so a failing test
// shows what Steward and Kubernetes' controllers did.
func (e *Env) LogOnFailure(t testing.TB) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if e.Steward != nil {
			t.Logf("steward log (last lines of %s):\n%s", e.Steward.LogPath(), e.Steward.LogTail(60))
		}
		if e.ControllerManager != nil {
			t.Logf("kube-controller-manager log (last lines):\n%s", e.ControllerManager.LogTail(60))
		}
	})
}
