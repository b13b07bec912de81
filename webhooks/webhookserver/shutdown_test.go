package webhookserver

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/stewardhq/steward/webhooks/serving"
)

// shutdownLog records the steps of a shutdown in order.
type shutdownLog struct {
	// lingered is the linger Shutdown was given.
	lingered time.Duration
	mu       sync.Mutex
	steps    []string
	at       map[string]time.Time
}

func (l *shutdownLog) add(step string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.steps = append(l.steps, step)
	if l.at == nil {
		l.at = map[string]time.Time{}
	}
	l.at[step] = time.Now()
}

func (l *shutdownLog) get() ([]string, map[string]time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.steps...), l.at
}

// fakeServer is a webhook server whose drain takes drainFor, or until its
// context ends when block is set.
type fakeServer struct {
	log      *shutdownLog
	drainFor time.Duration
	block    bool
}

func (f fakeServer) Shutdown(ctx context.Context, linger time.Duration) error {
	f.log.mu.Lock()
	f.log.lingered = linger
	f.log.mu.Unlock()
	f.log.add("listener closed")
	if f.block {
		<-ctx.Done()
		return ctx.Err()
	}
	time.Sleep(f.drainFor)
	f.log.add("requests in flight answered")
	return nil
}

// runShutdown runs shutdownOnSignal in the background with steps that
// record what they do.
func runShutdown(delay, timeout time.Duration, server fakeServer) (chan os.Signal, *serving.Drain, chan int, chan struct{}) {
	signals := make(chan os.Signal, 3)
	drain := &serving.Drain{}
	exited := make(chan int, 1)
	stopped := make(chan struct{})
	steps := shutdownSteps{
		Delay: delay, Timeout: timeout, Drain: drain, Server: server,
		Stop: func() { server.log.add("manager stopped"); close(stopped) },
		Exit: func(code int) { exited <- code },
	}
	go shutdownOnSignal(signals, steps, logr.Discard())
	return signals, drain, exited, stopped
}

func TestShutdownDrainsBeforeItStopsAnything(t *testing.T) {
	const delay = 300 * time.Millisecond
	log := &shutdownLog{}
	signals, drain, _, stopped := runShutdown(delay, 5*time.Second, fakeServer{log: log, drainFor: 100 * time.Millisecond})
	if drain.Draining() {
		t.Fatal("draining before any signal")
	}
	sigterm := time.Now()
	signals <- syscall.SIGTERM
	deadline := time.Now().Add(time.Second)
	for !drain.Draining() {
		if time.Now().After(deadline) {
			t.Fatal("SIGTERM did not begin the drain: /readyz stays ready and connections stay open")
		}
		time.Sleep(time.Millisecond)
	}
	if time.Since(sigterm) > delay/2 {
		t.Errorf("the drain began %s after SIGTERM; want at once", time.Since(sigterm))
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the manager was never stopped")
	}
	steps, at := log.get()
	want := []string{"listener closed", "requests in flight answered", "manager stopped"}
	if !slices.Equal(steps, want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	if d := at["listener closed"].Sub(sigterm); d < delay {
		t.Errorf("the listener closed %s after SIGTERM, before the %s delay ended", d, delay)
	}
}

func TestSecondSignalEndsTheDelay(t *testing.T) {
	log := &shutdownLog{}
	signals, _, exited, stopped := runShutdown(time.Hour, 5*time.Second, fakeServer{log: log})
	signals <- syscall.SIGTERM
	signals <- syscall.SIGINT
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("a second signal did not end the hour-long delay")
	}
	select {
	case code := <-exited:
		t.Fatalf("exited %d after two signals; want the drain to run", code)
	default:
	}
}

func TestAnotherSignalDuringTheDrainExitsAtOnce(t *testing.T) {
	log := &shutdownLog{}
	signals, _, exited, _ := runShutdown(0, time.Hour, fakeServer{log: log, block: true})
	signals <- syscall.SIGTERM
	for {
		if steps, _ := log.get(); len(steps) > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	signals <- syscall.SIGTERM
	select {
	case code := <-exited:
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a signal during the drain did not exit")
	}
}

func TestAStuckDrainStillStopsAtTheTimeout(t *testing.T) {
	log := &shutdownLog{}
	signals, _, _, stopped := runShutdown(0, 200*time.Millisecond, fakeServer{log: log, block: true})
	signals <- syscall.SIGTERM
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the manager was not stopped after the shutdown timeout")
	}
}

// servingCertDir writes a self-signed certificate for 127.0.0.1 into a
// directory, as --cert-dir holds one, and returns the directory and a
// pool trusting it.
func servingCertDir(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return dir, pool
}

// testServer is Steward's webhook server on a free port, its handlers
// behind a drain, and a keep-alive client for it.
type testServer struct {
	server  *Server
	drain   *serving.Drain
	addr    string
	pool    *x509.CertPool
	client  *http.Client
	started chan error
}

// startTestServer serves handlers (by path) as serve does and waits
// until the server answers /validate/fast, which it always registers.
func startTestServer(t *testing.T, handlers map[string]http.HandlerFunc) *testServer {
	t.Helper()
	dir, pool := servingCertDir(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ts := &testServer{
		server:  newServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir, TLSOpts: tlsOptions(false)}, logr.Discard()),
		drain:   &serving.Drain{},
		addr:    "127.0.0.1:" + strconv.Itoa(port),
		pool:    pool,
		client:  &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}},
		started: make(chan error, 1),
	}
	ts.server.Register("/validate/fast", ts.drain.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("fast"))
	})))
	for path, h := range handlers {
		ts.server.Register(path, ts.drain.Wrap(h))
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { ts.started <- ts.server.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, err := ts.call("/validate/fast")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook server did not answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ts
}

// call posts to path and reports whether the call went over a connection
// used before and whether its answer closes it.
func (ts *testServer) call(path string) (reused, closes bool, err error) {
	req, err := http.NewRequest(http.MethodPost, "https://"+ts.addr+path, nil)
	if err != nil {
		return false, false, err
	}
	req = req.WithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
	}))
	resp, err := ts.client.Do(req)
	if err != nil {
		return reused, false, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return reused, resp.Close, errors.New(resp.Status)
	}
	return reused, resp.Close, nil
}

// shutdown starts Shutdown in the background and waits until the
// listener refuses connections.
func (ts *testServer) shutdown(t *testing.T, linger time.Duration) (<-chan error, time.Time) {
	t.Helper()
	shut := make(chan error, 1)
	begun := time.Now()
	go func() { shut <- ts.server.Shutdown(context.Background(), linger) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", ts.addr, time.Second)
		if err != nil {
			return shut, begun
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts connections after Shutdown")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWebhookServerShutdownClosesTheListenerAndAnswersRequestsInFlight
// shuts the server down while a request is in flight: from the drain on,
// answers close their connections; Shutdown closes the listener at once
// and returns only once the request in flight is answered, with a
// context the shutdown did not cancel.
func TestWebhookServerShutdownClosesTheListenerAndAnswersRequestsInFlight(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	ctxErr := make(chan error, 1)
	ts := startTestServer(t, map[string]http.HandlerFunc{"/validate/slow": func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		ctxErr <- r.Context().Err()
		_, _ = w.Write([]byte("slow"))
	}})
	if reused, closes, err := ts.call("/validate/fast"); err != nil || !reused || closes {
		t.Fatalf("before the drain: reused %v, closes %v, %v; want the connection kept alive", reused, closes, err)
	}
	ts.drain.Begin()
	if _, closes, err := ts.call("/validate/fast"); err != nil || !closes {
		t.Errorf("during the drain: closes %v, %v; want Connection: close", closes, err)
	}
	inflight := make(chan error, 1)
	go func() {
		_, _, err := ts.call("/validate/slow")
		inflight <- err
	}()
	<-arrived
	shut, _ := ts.shutdown(t, 0)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a request was in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-inflight; err != nil {
		t.Errorf("the request in flight at Shutdown was not answered: %v", err)
	}
	if err := <-ctxErr; err != nil {
		t.Errorf("the request in flight saw its context end with the shutdown: %v", err)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return once the request in flight was answered")
	}
	if err := <-ts.started; err != nil {
		t.Errorf("Start: %v", err)
	}
}

// TestWebhookServerLetsAnIdleConnectionCarryOneMoreCall keeps a
// connection idle across the listener's close: it is not closed under
// the client, which sends one more call on it, answered with
// Connection: close; Shutdown then returns without waiting out the
// linger.
func TestWebhookServerLetsAnIdleConnectionCarryOneMoreCall(t *testing.T) {
	ts := startTestServer(t, nil)
	ts.drain.Begin()
	const linger = 10 * time.Second
	shut, begun := ts.shutdown(t, linger)
	time.Sleep(100 * time.Millisecond)
	reused, closes, err := ts.call("/validate/fast")
	if err != nil || !reused || !closes {
		t.Fatalf("a call on the connection left idle when the listener closed: reused %v, closes %v, %v; want it answered on that connection, with Connection: close", reused, closes, err)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if waited := time.Since(begun); waited > linger/2 {
			t.Errorf("Shutdown took %s though no connection was left", waited)
		}
	case <-time.After(linger):
		t.Fatal("Shutdown waited out the linger though the last connection had closed")
	}
}

// TestWebhookServerClosesConnectionsStillIdleAfterTheLinger leaves a
// connection idle after one call, as the API server leaves the ones it
// has no use for: Shutdown closes it once the linger has passed.
func TestWebhookServerClosesConnectionsStillIdleAfterTheLinger(t *testing.T) {
	ts := startTestServer(t, nil)
	ts.client.CloseIdleConnections()
	conn, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.pool})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST /validate/fast HTTP/1.1\r\nHost: steward\r\nContent-Length: 0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		t.Fatal("before the drain an answer closed its connection")
	}
	ts.drain.Begin()
	const linger = 300 * time.Millisecond
	shut, begun := ts.shutdown(t, linger)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("reading the idle connection after Shutdown: %v, want EOF (closed)", err)
	}
	if closed := time.Since(begun); closed < linger {
		t.Errorf("the idle connection was closed %s after Shutdown began, before the %s linger", closed, linger)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

func TestWebhookServerShutdownBeforeStartReturnsAtOnce(t *testing.T) {
	server := newServer(webhook.Options{}, logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := server.Shutdown(ctx, time.Minute); err != nil {
		t.Errorf("Shutdown of a server never started: %v", err)
	}
}

// TestWebhookServerStopsCleanlyWithNoConnectionOpen shuts the server down
// with nothing ever connected, many times: Start must return no error (the
// manager would take one for a failure and exit with status 1).
func TestWebhookServerStopsCleanlyWithNoConnectionOpen(t *testing.T) {
	dir, _ := servingCertDir(t)
	for range 30 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		server := newServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir}, logr.Discard())
		started := make(chan error, 1)
		go func() { started <- server.Start(context.Background()) }()
		for {
			server.mu.Lock()
			up := server.started
			server.mu.Unlock()
			if up {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err := server.Shutdown(context.Background(), time.Second); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if err := <-started; err != nil {
			t.Fatalf("Start returned %v after a clean shutdown", err)
		}
	}
}
