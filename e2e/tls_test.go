package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/stewardhq/steward/e2e/harness"
)

func dialTLS(port int, cfg *tls.Config) (*tls.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", "127.0.0.1:"+strconv.Itoa(port), cfg)
	if err != nil {
		return nil, err
	}
	return conn, nil
}

// TestTLSBelow12IsRefused proves the webhook server refuses TLS 1.0 and
// 1.1 handshakes and accepts 1.2 and 1.3.
func TestTLSBelow12IsRefused(t *testing.T) {
	s := env.Steward
	roots := pool(s.CABundle())
	for name, tc := range map[string]struct {
		version uint16
		refused bool
	}{
		"TLS1.0": {tls.VersionTLS10, true},
		"TLS1.1": {tls.VersionTLS11, true},
		"TLS1.2": {tls.VersionTLS12, false},
		"TLS1.3": {tls.VersionTLS13, false},
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := dialTLS(s.Port(), &tls.Config{RootCAs: roots, MinVersion: tc.version, MaxVersion: tc.version}) //nolint:gosec // old versions on purpose
			if err == nil {
				defer conn.Close()
			}
			switch {
			case tc.refused && err == nil:
				t.Errorf("a %s handshake succeeded (negotiated %s)", name, tls.VersionName(conn.ConnectionState().Version))
			case tc.refused && !strings.Contains(err.Error(), "remote error"):
				t.Errorf("a %s handshake failed on the client's side, not refused by Steward: %v", name, err)
			case !tc.refused && err != nil:
				t.Errorf("a %s handshake failed: %v", name, err)
			}
		})
	}
}

// TestOnlyAEADSuitesOverTLS12 proves that the webhook and metrics servers
// refuse a TLS 1.2 client offering only CBC suites (open to padding-oracle
// attacks, and the only ones with SHA-1), and accept one offering AES-GCM.
func TestOnlyAEADSuitesOverTLS12(t *testing.T) {
	s := env.Steward
	metricsPort, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(s.MetricsURL(), "https://127.0.0.1:"), "/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	cbc := []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
		tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_AES_256_CBC_SHA,
	}
	gcm := []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}
	for name, port := range map[string]int{"webhook": s.Port(), "metrics": metricsPort} {
		t.Run(name, func(t *testing.T) {
			// The metrics certificate is self-signed: only the suites matter.
			cfg := func(suites []uint16) *tls.Config {
				return &tls.Config{RootCAs: pool(s.CABundle()), InsecureSkipVerify: name == "metrics", MaxVersion: tls.VersionTLS12, CipherSuites: suites} //nolint:gosec // suites on purpose
			}
			if conn, err := dialTLS(port, cfg(cbc)); err == nil {
				conn.Close()
				t.Errorf("a TLS 1.2 handshake offering only CBC suites succeeded (%s)", tls.CipherSuiteName(conn.ConnectionState().CipherSuite))
			} else if !strings.Contains(err.Error(), "remote error") {
				t.Errorf("the CBC-only handshake failed on the client's side, not refused by Steward: %v", err)
			}
			conn, err := dialTLS(port, cfg(gcm))
			if err != nil {
				t.Fatalf("a TLS 1.2 handshake offering AES-GCM: %v", err)
			}
			conn.Close()
		})
	}
}

// TestHTTP2IsOffUnlessEnabled proves that Steward does not offer HTTP/2
// (CVE-2023-44487, rapid reset) by default, even to a client that prefers
// it, and that --enable-http2 turns it on, so the check can tell the two
// apart.
func TestHTTP2IsOffUnlessEnabled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	negotiate := func(port int, roots []byte) string {
		t.Helper()
		conn, err := dialTLS(port, &tls.Config{RootCAs: pool(roots), NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().NegotiatedProtocol
	}
	if got := negotiate(env.Steward.Port(), env.Steward.CABundle()); got == "h2" {
		t.Errorf("by default Steward negotiated %q with a client offering h2, want http/1.1", got)
	}
	h2only, err := dialTLS(env.Steward.Port(), &tls.Config{RootCAs: pool(env.Steward.CABundle()), NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12})
	if err == nil {
		if p := h2only.ConnectionState().NegotiatedProtocol; p == "h2" {
			t.Errorf("a client offering only h2 negotiated it")
		}
		h2only.Close()
	}
	p := startStewardProc(t, ctx, procOptions{args: []string{"--enable-http2"}})
	if got := negotiate(p.port, p.ca.pem); got != "h2" {
		t.Errorf("with --enable-http2, negotiated %q, want h2", got)
	}
}

// TestClientCertificatesAreRequiredWithClientCAFile runs a Steward with
// --client-ca-file and proves it serves a client presenting a certificate
// from that CA, and refuses clients with none or with one from another CA
// before any request reaches a handler.
func TestClientCertificatesAreRequiredWithClientCAFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clientCA := newTestCA(t, "api-server-client-ca")
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(caFile, clientCA.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startStewardProc(t, ctx, procOptions{args: []string{"--client-ca-file", caFile}})
	obj := mustJSON(t, map[string]any{"metadata": map[string]any{"name": "web", "labels": map[string]string{fleetHashLabel: "x"}}})
	body := reviewJSON(t, janeRequest(admissionv1.Create, configMapKind, configMaps, "default", "web", obj, nil))
	post := func(certs ...tls.Certificate) (reviewResult, error) {
		return postReview(ctx, webhookClient(pool(p.ca.pem), certs...), p.url("/validate/fleetguard"), "application/json", bytes.NewReader(body))
	}

	res, err := post(clientCA.clientCert(t, "kube-apiserver"))
	if err != nil || res.status != http.StatusOK || res.review.Response == nil {
		t.Fatalf("a client with a certificate from the client CA was not served: %v %s", err, res)
	}
	if res.review.Response.Allowed {
		t.Errorf("served, but the spoofed Fleet ownership was allowed: %s", res)
	}
	otherCA := newTestCA(t, "other-ca")
	for name, certs := range map[string][]tls.Certificate{
		"NoCertificate":           nil,
		"CertificateFromOtherCA":  {otherCA.clientCert(t, "kube-apiserver")},
		"ServingCertificateAsOwn": {mustPair(t, p.certDir)},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := post(certs...)
			if err == nil {
				t.Errorf("served without a valid client certificate: %s", res)
			}
		})
	}

	// The API server's client CA rotates: the file is rewritten in place,
	// as a mounted Secret is, and Steward follows without a restart.
	t.Run("RotatedCAIsFollowedWithoutRestart", func(t *testing.T) {
		if err := os.WriteFile(caFile, otherCA.pem, 0o600); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 30*time.Second, func() error {
			if _, err := post(otherCA.clientCert(t, "kube-apiserver")); err != nil {
				return fmt.Errorf("a client of the new CA is not served yet: %v", err)
			}
			return nil
		})
		if res, err := post(clientCA.clientCert(t, "kube-apiserver")); err == nil {
			t.Errorf("after the rotation, a client of the old CA was still served: %s", res)
		}
	})
}

func mustPair(t *testing.T, dir string) tls.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// slowLorisLimit is how long a client may take to send its request: the
// TLS handshake and the headers are bounded by controller-runtime's
// ReadHeaderTimeout (32 s), the body by Steward's own read deadline; plus
// a margin for a loaded machine.
const slowLorisLimit = 40 * time.Second

// TestSlowClientsAreCutOff proves that a client that opens a connection and
// then sends nothing, sends its request headers a byte at a time, or sends
// its body a byte at a time, cannot hold the connection open: the webhook
// server closes each within slowLorisLimit. It runs in parallel with other
// tests, against its own Steward, because it waits for the server's
// timeouts.
func TestSlowClientsAreCutOff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := startStewardProc(t, ctx, procOptions{})
	roots := pool(p.ca.pem)
	giveUp := slowLorisLimit + 20*time.Second

	// trickle sends prefix at once and then rest one byte per second, and
	// returns how long the server kept the connection open.
	trickle := func(prefix, rest []byte) (time.Duration, error) {
		conn, err := dialTLS(p.port, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		start := time.Now()
		closed := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, conn)
			closed <- err
		}()
		if _, err := conn.Write(prefix); err != nil {
			return 0, err
		}
		deadline := time.After(giveUp)
		for _, b := range rest {
			select {
			case err := <-closed:
				return time.Since(start), closedOrTimeout(err)
			case <-deadline:
				return time.Since(start), errors.New("the server kept the connection open")
			case <-time.After(time.Second):
			}
			if _, err := conn.Write([]byte{b}); err != nil {
				return time.Since(start), nil
			}
		}
		return time.Since(start), errors.New("the whole request was sent one byte a second and the connection is still open")
	}
	headers := "POST /validate/fleetguard HTTP/1.1\r\nHost: steward\r\nContent-Type: application/json\r\n"
	cases := map[string]func() (time.Duration, error){
		"SilentConnection": func() (time.Duration, error) {
			// A raw TCP connection that never starts its TLS handshake.
			start := time.Now()
			conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p.port), 5*time.Second)
			if err != nil {
				return 0, err
			}
			defer conn.Close()
			_ = conn.SetReadDeadline(time.Now().Add(giveUp))
			_, err = io.Copy(io.Discard, conn)
			return time.Since(start), closedOrTimeout(err)
		},
		"SlowHeaders": func() (time.Duration, error) {
			return trickle([]byte(headers), bytes.Repeat([]byte("X-Slow: a\r\n"), 10))
		},
		"SlowBody": func() (time.Duration, error) {
			return trickle([]byte(headers+"Content-Length: 100\r\n\r\n"), bytes.Repeat([]byte(" "), 100))
		},
	}
	type result struct {
		name    string
		elapsed time.Duration
		err     error
	}
	results := make(chan result, len(cases))
	for name, run := range cases {
		go func() {
			elapsed, err := run()
			results <- result{name, elapsed, err}
		}()
	}
	for range cases {
		r := <-results
		t.Run(r.name, func(t *testing.T) {
			if r.err != nil {
				t.Fatalf("not cut off after %s: %v", r.elapsed.Round(100*time.Millisecond), r.err)
			}
			t.Logf("cut off after %s", r.elapsed.Round(100*time.Millisecond))
			if r.elapsed > slowLorisLimit {
				t.Errorf("cut off after %s, want within %s", r.elapsed, slowLorisLimit)
			}
		})
	}
}

// closedOrTimeout turns the end of a read into nil when the server closed
// the connection, or an error when the client gave up first.
func closedOrTimeout(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("the server kept the connection open")
	}
	return nil
}
