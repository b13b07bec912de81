package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"
)

// waitOK polls url until it answers 200, within timeout, or until exited
// closes (the process serving it is gone: exitErr says why). Steward and
// the Flux controllers are waited for this way. An https url is verified
// with tlsConfig (the serving certificate's CA the harness issued).
func waitOK(ctx context.Context, what, url string, tlsConfig *tls.Config, timeout time.Duration, exited <-chan struct{}, exitErr func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &http.Client{Timeout: 2 * time.Second}
	if tlsConfig != nil {
		c.Transport = &http.Transport{TLSClientConfig: tlsConfig}
	}
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
