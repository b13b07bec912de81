package e2e

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stewardhq/steward/e2e/harness"
)

// insecureClient skips verifying the server: the metrics endpoint's
// certificate is self-signed, and what is tested is the token.
var insecureClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // see above

// TestMetricsNeedAuthentication proves that the metrics endpoint answers
// only clients the API server authenticates and authorizes: none without
// a token or with a forged one, and Prometheus' way, a service account's
// token with get on /metrics, gets the metrics.
func TestMetricsNeedAuthentication(t *testing.T) {
	s := env.Steward
	get := func(token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, s.MetricsURL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := insecureClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", s.MetricsURL(), err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if !strings.HasPrefix(s.MetricsURL(), "https://") {
		t.Fatalf("metrics are served at %s, not over HTTPS", s.MetricsURL())
	}
	for name, token := range map[string]string{"NoToken": "", "ForgedToken": "eyJhbGciOiJSUzI1NiJ9.e30.c2lnbmF0dXJl"} {
		t.Run(name, func(t *testing.T) {
			if code, body := get(token); code != http.StatusUnauthorized || strings.Contains(body, "steward_") {
				t.Errorf("HTTP %d, want 401:\n%.200s", code, body)
			}
		})
	}
	t.Run("ServiceAccountToken", func(t *testing.T) {
		resp, err := s.MetricsRequest("")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "steward_request_memory_inflight_bytes") {
			t.Errorf("HTTP %d, want 200 with Steward's metrics:\n%.300s", resp.StatusCode, body)
		}
		// The version stamped at build time is reported.
		if n, err := s.Counter("steward_build_info", map[string]string{"version": harness.BuildVersion}); err != nil || n != 1 {
			t.Errorf("steward_build_info{version=%q} = %v, %v; want 1", harness.BuildVersion, n, err)
		}
	})
}
