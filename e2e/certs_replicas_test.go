package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// replica is an extra `steward serve` process, started with the harness
// Steward's own command line and its own port, CertDir and probe port: the
// way a Deployment's replicas share one Secret and one pair of webhook
// configurations.
type replica struct {
	port    int
	certDir string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
}

func startReplica(t *testing.T, ctx context.Context, name string) *replica {
	t.Helper()
	dir := t.TempDir()
	r := &replica{certDir: filepath.Join(dir, "certs"), logPath: filepath.Join(dir, "steward.log"), done: make(chan struct{})}
	var err error
	if r.port, err = freeLocalPort(); err != nil {
		t.Fatal(err)
	}
	health, err := freeLocalPort()
	if err != nil {
		t.Fatal(err)
	}
	// Later flags win: same mode, Secret and lifetimes, own listeners.
	args := append(env.Steward.Args(),
		"--port", strconv.Itoa(r.port),
		"--cert-dir", r.certDir,
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(health))
	logFile, err := os.Create(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	r.cmd = exec.Command(args[0], args[1:]...)
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.SysProcAttr = replicaProcAttr()
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting replica %s: %v", name, err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(harness.StopTimeout):
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			log, _ := os.ReadFile(r.logPath)
			lines := strings.Split(strings.TrimSpace(string(log)), "\n")
			t.Logf("replica %s log (last lines):\n%s", name, strings.Join(lines[max(0, len(lines)-30):], "\n"))
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", health)
	if err := harness.Poll(ctx, harness.ReadyTimeout, func() error {
		select {
		case <-r.done:
			return errors.New("exited")
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	}); err != nil {
		t.Fatalf("replica %s not ready: %v", name, err)
	}
	return r
}

func (r *replica) servedCert() []byte {
	b, _ := os.ReadFile(filepath.Join(r.certDir, "tls.crt"))
	return b
}

// roundRobin is a TCP proxy that hands each new connection to the next
// replica, as a Service does. TLS passes through, so the API server
// verifies the certificate of whichever replica it reaches.
type roundRobin struct {
	ln       net.Listener
	backends []int
	next     atomic.Uint64
	conns    []atomic.Int64
	mu       sync.Mutex
	open     []net.Conn
}

func startRoundRobin(t *testing.T, backends []int) *roundRobin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rr := &roundRobin{ln: ln, backends: backends, conns: make([]atomic.Int64, len(backends))}
	go rr.serve()
	t.Cleanup(rr.close)
	return rr
}

func (rr *roundRobin) port() int { return rr.ln.Addr().(*net.TCPAddr).Port }

func (rr *roundRobin) serve() {
	for {
		in, err := rr.ln.Accept()
		if err != nil {
			return
		}
		i := int(rr.next.Add(1)-1) % len(rr.backends)
		go rr.proxy(in, i)
	}
}

func (rr *roundRobin) proxy(in net.Conn, i int) {
	out, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(rr.backends[i]))
	if err != nil {
		in.Close()
		return
	}
	rr.conns[i].Add(1)
	rr.mu.Lock()
	rr.open = append(rr.open, in, out)
	rr.mu.Unlock()
	go func() { _, _ = io.Copy(out, in); out.Close(); in.Close() }()
	_, _ = io.Copy(in, out)
	in.Close()
	out.Close()
}

func (rr *roundRobin) close() {
	rr.ln.Close()
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for _, c := range rr.open {
		c.Close()
	}
}

// connections returns how many connections each replica has received.
func (rr *roundRobin) connections() []int64 {
	out := make([]int64, len(rr.conns))
	for i := range rr.conns {
		out[i] = rr.conns[i].Load()
	}
	return out
}

// repointWebhooks sends every webhook of Steward's configurations to port
// instead of from. Restarting the harness Steward re-registers them.
func repointWebhooks(t *testing.T, ctx context.Context, from, to int) {
	t.Helper()
	swap := func(cc *admissionregistrationv1.WebhookClientConfig) {
		if cc.URL != nil {
			u := strings.Replace(*cc.URL, ":"+strconv.Itoa(from)+"/", ":"+strconv.Itoa(to)+"/", 1)
			cc.URL = &u
		}
	}
	err := harness.Poll(ctx, 10*time.Second, func() error {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, vwc); err != nil {
			return err
		}
		for i := range vwc.Webhooks {
			swap(&vwc.Webhooks[i].ClientConfig)
		}
		return env.Client.Update(ctx, vwc)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = harness.Poll(ctx, 10*time.Second, func() error {
		mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, mwc); err != nil {
			return err
		}
		for i := range mwc.Webhooks {
			swap(&mwc.Webhooks[i].ClientConfig)
		}
		return env.Client.Update(ctx, mwc)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func freeLocalPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
