package harness

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// waitOK polls url until it answers 200, within timeout, or until exited
// closes (the process serving it is gone: exitErr says why). Steward and
// the Flux controllers are waited for this way.
func waitOK(ctx context.Context, what, url string, timeout time.Duration, exited <-chan struct{}, exitErr func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &http.Client{Timeout: 2 * time.Second}
	last := "no answer"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before it was ready: %v", what, exitErr())
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready within %s (GET %s: %s)", what, timeout, url, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
