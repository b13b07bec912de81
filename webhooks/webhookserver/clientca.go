package webhookserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// clientCAReloadInterval is how often the client CA file is read again. A
// CA mounted from a Secret or ConfigMap changes in place when the Secret
// does; reading a few KiB every ten seconds costs nothing.
const clientCAReloadInterval = 10 * time.Second

// clientCAs verifies client certificates against the CA bundle in a file,
// read again whenever it changes, so that the API server's client CA can
// rotate without restarting Steward.
type clientCAs struct {
	path string
	log  logr.Logger
	pool atomic.Pointer[x509.CertPool]
	pem  []byte // the bundle the pool was made of; only reload touches it
}

// newClientCAs reads path once. A file with no certificate leaves the pool
// empty, which refuses every client: a mistake must never let anyone in.
func newClientCAs(path string, log logr.Logger) *clientCAs {
	c := &clientCAs{path: path, log: log}
	c.pool.Store(x509.NewCertPool())
	if err := c.reload(); err != nil {
		log.Error(err, "no client CA: every client is refused until the file holds one", "file", path)
	}
	return c
}

// reload reads the file and, if it changed and holds certificates, uses
// them from the next handshake on. An unreadable or empty file keeps the
// last good bundle: a Secret being rewritten must not lock the API server
// out, and must not let others in.
func (c *clientCAs) reload() error {
	data, err := os.ReadFile(c.path)
	if err != nil {
		return fmt.Errorf("reading the client CA file: %w", err)
	}
	if bytes.Equal(data, c.pem) {
		return nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return errors.New("the client CA file holds no PEM certificate")
	}
	c.pem = data
	c.pool.Store(pool)
	c.log.Info("client CA loaded", "file", c.path)
	return nil
}

// Start reloads the file until ctx ends; it is a manager Runnable.
func (c *clientCAs) Start(ctx context.Context) error {
	return pollFile(ctx, clientCAReloadInterval, func() {
		if err := c.reload(); err != nil {
			c.log.Error(err, "keeping the previous client CA", "file", c.path)
		}
	})
}

// pollFile calls read every interval until ctx ends. Steward's mounted
// files (the client CA, the configuration) are read again on a timer
// rather than watched: the kubelet updates a mounted Secret or ConfigMap by
// swapping a symlink, which a watch on the file itself does not see.
func pollFile(ctx context.Context, interval time.Duration, read func()) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			read()
		}
	}
}

// NeedLeaderElection is false: every replica verifies its own clients.
func (c *clientCAs) NeedLeaderElection() bool { return false }

// configure makes a TLS server ask every client for a certificate and
// accept only those that chain to the current bundle, for client
// authentication, as tls.RequireAndVerifyClientCert would with a fixed one.
func (c *clientCAs) configure(cfg *tls.Config) {
	cfg.ClientAuth = tls.RequireAnyClientCert
	cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		certs := make([]*x509.Certificate, len(raw))
		for i, der := range raw {
			cert, err := x509.ParseCertificate(der)
			if err != nil {
				return fmt.Errorf("client certificate: %w", err)
			}
			certs[i] = cert
		}
		if len(certs) == 0 {
			return errors.New("no client certificate")
		}
		opts := x509.VerifyOptions{
			Roots:         c.pool.Load(),
			Intermediates: x509.NewCertPool(),
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		for _, cert := range certs[1:] {
			opts.Intermediates.AddCert(cert)
		}
		_, err := certs[0].Verify(opts)
		return err
	}
}
