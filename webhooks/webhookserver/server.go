// Package webhookserver is the webhook server's life cycle, what `steward
// serve` runs (Run): the manager with the rules served at their paths, the
// readiness checks, the metrics endpoint and its authentication
// (metricsauth.go), the client CA read again when it changes
// (clientca.go), the configuration file reloaded when it changes
// (configreload.go, with its metrics and Events), the background audit,
// the soft memory limit (memlimit.go) and the collector's pace while
// starting (startupgc.go), and the JSON logger (logging.go). Its server
// listens with TLS (tlsOptions), reloads its certificate, reports when it
// accepts connections, and shuts down on a signal without failing a call
// of the API server (shutdownOnSignal, with the serving layer's Drain).
package webhookserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Server serves Steward's webhooks as controller-runtime's webhook
// server does (the same TLS settings, certificate reloading, timeouts,
// per-path metrics), and shuts down in a way that fails no call of the
// API server (Shutdown), which controller-runtime's cannot:
//
//   - It shuts down when Steward says so, at the end of --shutdown-delay,
//     before the manager stops anything else. The manager alone would stop
//     it last, after the audit, the configuration reloader and the
//     informers, a moment of unknown length after the delay, during which
//     requests would be answered from caches that no longer follow the
//     cluster.
//   - Requests in flight are answered with a context that is not cancelled
//     by the shutdown.
//   - It waits for the connections still open to carry one more call
//     before it closes them. The API server keeps idle connections to a
//     webhook for 90 s and never retries a call: closing one just as the
//     API server sends a call on it fails that call ("failed calling
//     webhook ... EOF"). During the drain every answer closes its
//     connection (serving.Drain), so a connection that carries one more
//     call is closed cleanly, by its answer. Those the API server opened
//     but has not used yet (it dials a spare when all are busy) are the
//     ones at risk, and http.Server.Shutdown would close them at once.
type Server struct {
	// Server registers the webhooks, instrumented with controller-runtime's
	// metrics, on mux.
	webhook.Server
	opts webhook.Options
	mux  *http.ServeMux
	log  logr.Logger

	mu      sync.Mutex
	started bool
	conns   map[net.Conn]http.ConnState

	stopOnce sync.Once
	stop     chan shutdownRequest
	stopped  chan struct{}
}

// shutdownRequest is a Shutdown's bounds.
type shutdownRequest struct {
	ctx    context.Context
	linger time.Duration
}

// newServer returns the Server of opts; its webhooks are registered with its
// embedded webhook.Server's Register.
func newServer(opts webhook.Options, log logr.Logger) *Server {
	mux := http.NewServeMux()
	opts.WebhookMux = mux
	if opts.CertName == "" {
		opts.CertName = "tls.crt"
	}
	if opts.KeyName == "" {
		opts.KeyName = "tls.key"
	}
	return &Server{
		Server:  webhook.NewServer(opts),
		opts:    opts,
		mux:     mux,
		log:     log,
		conns:   map[net.Conn]http.ConnState{},
		stop:    make(chan shutdownRequest, 1),
		stopped: make(chan struct{}),
	}
}

// Start serves until ctx ends or Shutdown is called, and returns once the
// server has drained.
func (s *Server) Start(ctx context.Context) error {
	defer close(s.stopped)
	cfg := &tls.Config{NextProtos: []string{"h2"}}
	for _, op := range s.opts.TLSOpts {
		op(cfg)
	}
	if cfg.GetCertificate == nil {
		watcher, err := certwatcher.New(filepath.Join(s.opts.CertDir, s.opts.CertName), filepath.Join(s.opts.CertDir, s.opts.KeyName))
		if err != nil {
			return err
		}
		cfg.GetCertificate = watcher.GetCertificate
		go func() {
			if err := watcher.Start(ctx); err != nil {
				s.log.Error(err, "certificate watcher")
			}
		}()
	}
	ln, err := tls.Listen("tcp", net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port)), cfg)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: s.mux,
		// Requests in flight during the drain must be answered, not
		// cancelled with the server.
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnState:         s.track,
		MaxHeaderBytes:    1 << 20,
		IdleTimeout:       90 * time.Second,
		ReadHeaderTimeout: 32 * time.Second,
	}
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	s.log.Info("serving webhooks", "host", s.opts.Host, "port", s.opts.Port)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	var req shutdownRequest
	select {
	case err := <-served:
		return fmt.Errorf("webhook server: %w", err)
	case req = <-s.stop:
	case <-ctx.Done():
		// The manager stops without a shutdown sequence (a runnable
		// failed): drain in flight, as controller-runtime's server does.
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req = shutdownRequest{ctx: c}
	}
	// Closing the listener ends Serve; the connections it accepted stay
	// open. Shutdown must come after Serve has returned: it would close
	// the listener Serve still tracks a second time, and fail.
	_ = ln.Close()
	if err := <-served; err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("webhook server: %w", err)
	}
	open := s.openConns()
	moved := s.waitConnsClosed(req.ctx, req.linger)
	left := s.openConns()
	s.log.Info("webhook listener closed", "openConnections", open, "closedAfterTheirLastAnswer", open-left, "closingNow", left, "waited", moved.Round(time.Millisecond).String())
	if err := srv.Shutdown(req.ctx); err != nil {
		return fmt.Errorf("webhook server: requests in flight were still unanswered at the shutdown timeout: %w", err)
	}
	return nil
}

// Shutdown closes the listener, then waits up to linger for the
// connections still open to be closed by the answers to their next calls,
// then closes the idle ones and waits for the requests in flight to be
// answered; ctx bounds it all.
func (s *Server) Shutdown(ctx context.Context, linger time.Duration) error {
	s.stopOnce.Do(func() { s.stop <- shutdownRequest{ctx: ctx, linger: linger} })
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-s.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// track follows the connections' states.
func (s *Server) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch state {
	case http.StateClosed, http.StateHijacked:
		delete(s.conns, c)
	default:
		s.conns[c] = state
	}
}

func (s *Server) openConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// waitConnsClosed waits until no connection is open, linger has passed or
// ctx ends, and returns how long it waited.
func (s *Server) waitConnsClosed(ctx context.Context, linger time.Duration) time.Duration {
	start := time.Now()
	deadline := time.NewTimer(linger)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for s.openConns() > 0 {
		select {
		case <-deadline.C:
			return time.Since(start)
		case <-ctx.Done():
			return time.Since(start)
		case <-tick.C:
		}
	}
	return time.Since(start)
}

// StartedChecker passes once the server accepts TLS connections.
func (s *Server) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		s.mu.Lock()
		started := s.started
		s.mu.Unlock()
		if !started {
			return errors.New("webhook server has not been started yet")
		}
		d := &net.Dialer{Timeout: 10 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only checks that the server accepts connections
		if err != nil {
			return fmt.Errorf("webhook server is not reachable: %w", err)
		}
		return conn.Close()
	}
}
