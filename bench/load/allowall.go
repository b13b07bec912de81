package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/e2e/harness"
)

// allowAllCommand is the hidden subcommand that serves the allow-all
// webhook. It runs as a child process of the load tool (the same binary),
// so that its CPU time and memory are its own, as Steward's are.
const allowAllCommand = "serve-allow-all"

// serveAllowAll serves every path in paths (comma-separated) on port with
// a controller-runtime webhook that allows every request, configured as
// Steward's server is (TLS 1.2 minimum, HTTP/1.1 only, the certificate in
// certDir), and controller-runtime's metrics on metricsPort.
func serveAllowAll(port, metricsPort, certDir, paths string) error {
	p, err := strconv.Atoi(port)
	if err != nil {
		return err
	}
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: p, CertDir: certDir, TLSOpts: []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion, c.NextProtos = tls.VersionTLS12, []string{"http/1.1"}
	}}})
	allow := &webhook.Admission{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})}
	for _, path := range strings.Split(paths, ",") {
		srv.Register(path, allow)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := srv.StartedChecker()(r); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	})
	ms := &http.Server{Addr: "127.0.0.1:" + metricsPort, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = ms.ListenAndServe() }()
	defer ms.Close()
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	return srv.Start(ctx)
}

type allowAll struct {
	cmd               *exec.Cmd
	port, metricsPort int
	cert              harness.ServingCert
	exited            chan struct{}
}

// startAllowAll runs the allow-all webhook serving paths, with a CA and
// serving certificate from the harness's generator, the one Steward's come
// from: the same key type and chain, so a TLS handshake costs both the same.
func startAllowAll(ctx context.Context, dir string, paths []string) (*allowAll, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	a := &allowAll{exited: make(chan struct{})}
	certDir := filepath.Join(dir, "allow-all-certs")
	if a.cert, err = harness.NewServingCert(); err == nil {
		err = a.cert.Write(certDir)
	}
	for _, p := range []*int{&a.port, &a.metricsPort} {
		if err == nil {
			*p, err = harness.FreePort()
		}
	}
	log, err2 := os.Create(filepath.Join(dir, "allow-all.log"))
	if err = errors.Join(err, err2); err != nil {
		return nil, err
	}
	defer log.Close()
	a.cmd = exec.Command(self, allowAllCommand, strconv.Itoa(a.port), strconv.Itoa(a.metricsPort), certDir, strings.Join(paths, ","))
	a.cmd.Stdout, a.cmd.Stderr = log, log
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL} // killed if this process dies first
	if err := a.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the allow-all webhook: %w", err)
	}
	go func() { _ = a.cmd.Wait(); close(a.exited) }()
	err = harness.Poll(ctx, 30*time.Second, func() error {
		select {
		case <-a.exited:
			return nil // said below
		default:
		}
		resp, err := http.Get(a.local("/readyz"))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
	select {
	case <-a.exited:
		err = errors.New("it exited at start-up")
	default:
	}
	if err != nil {
		a.stop()
		return nil, fmt.Errorf("the allow-all webhook did not get ready: %w; see allow-all.log", err)
	}
	return a, nil
}

// local is a URL of the plain-HTTP metrics port.
func (a *allowAll) local(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", a.metricsPort, path)
}

// stop ends the process: SIGTERM, then SIGKILL after 10 seconds.
func (a *allowAll) stop() {
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(10 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
}
