package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
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
// webhook. It runs as a child process of the load tool (the same binary) so
// that its CPU time and memory are its own, as they are for Steward.
const allowAllCommand = "serve-allow-all"

// runAllowAllServer serves every path in -paths with a controller-runtime
// webhook that allows every request, configured as Steward's server is
// (TLS 1.2 minimum, HTTP/1.1 only), with controller-runtime's metrics on
// -metrics-port.
func runAllowAllServer(args []string) error {
	fs := flag.NewFlagSet(allowAllCommand, flag.ContinueOnError)
	port := fs.Int("port", 0, "webhook port on 127.0.0.1")
	metricsPort := fs.Int("metrics-port", 0, "metrics and readiness port on 127.0.0.1")
	certDir := fs.String("cert-dir", "", "directory with tls.crt and tls.key")
	paths := fs.String("paths", "", "comma-separated paths to serve")
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv := webhook.NewServer(webhook.Options{
		Host:    "127.0.0.1",
		Port:    *port,
		CertDir: *certDir,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.MinVersion = tls.VersionTLS12
			c.NextProtos = []string{"http/1.1"}
		}},
	})
	allow := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})
	rec := newRecorder()
	for _, p := range strings.Split(*paths, ",") {
		if p != "" {
			srv.Register(p, rec.wrap(p, &webhook.Admission{Handler: allow}))
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{}))
	rec.serve(mux)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := srv.StartedChecker()(r); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	})
	ms := &http.Server{Addr: "127.0.0.1:" + strconv.Itoa(*metricsPort), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = ms.ListenAndServe() }()
	defer ms.Close()
	return srv.Start(ctx)
}

// allowAll is the running allow-all webhook process.
type allowAll struct {
	cmd         *exec.Cmd
	port        int
	metricsPort int
	ca          []byte
	exited      chan struct{}
}

// startAllowAll runs the allow-all webhook as a child process serving
// paths, and waits until it answers.
func startAllowAll(ctx context.Context, dir string, paths []string) (*allowAll, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	sc, err := newServingCert()
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "allow-all-certs")
	if err := sc.write(certDir); err != nil {
		return nil, err
	}
	a := &allowAll{ca: sc.CA, exited: make(chan struct{})}
	if a.port, err = harness.FreePort(); err != nil {
		return nil, err
	}
	if a.metricsPort, err = harness.FreePort(); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "allow-all.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	a.cmd = exec.Command(self, allowAllCommand,
		"-port", strconv.Itoa(a.port), "-metrics-port", strconv.Itoa(a.metricsPort),
		"-cert-dir", certDir, "-paths", strings.Join(paths, ","))
	a.cmd.Stdout, a.cmd.Stderr = log, log
	// Its own process group, and killed if this process dies first.
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := a.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the allow-all webhook: %w", err)
	}
	go func() { _ = a.cmd.Wait(); close(a.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := scrapeClient.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", a.metricsPort))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(a.port)); err == nil {
					c.Close()
					return a, nil
				}
			}
		}
		select {
		case <-a.exited:
			return nil, errors.New("the allow-all webhook exited at start-up; see allow-all.log")
		case <-ctx.Done():
			a.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			a.stop()
			return nil, errors.New("the allow-all webhook was not ready within 30s")
		}
	}
}

func (a *allowAll) pid() int { return a.cmd.Process.Pid }

func (a *allowAll) metricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", a.metricsPort)
}

func (a *allowAll) url(path string) string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", a.port, path)
}

// stop ends the process: SIGTERM, then SIGKILL after 10 seconds.
func (a *allowAll) stop() {
	select {
	case <-a.exited:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(10 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
}
