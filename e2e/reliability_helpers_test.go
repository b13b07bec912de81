package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// Fleet's ownership keys, as fleetguard reads them.
const (
	fleetHashLabel = "objectset.rio.cattle.io/hash"
	fleetIDAnnot   = "objectset.rio.cattle.io/id"
	fleetAgent     = "system:serviceaccount:cattle-fleet-system:fleet-agent"
	breakGlass     = "steward:break-glass"
)

// fleetManaged returns metadata that makes an object Fleet-managed.
func fleetManaged(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace:   namespace,
		Name:        name,
		Labels:      map[string]string{fleetHashLabel: "0123456789abcdef"},
		Annotations: map[string]string{fleetIDAnnot: "default-reliability"},
	}
}

// userConfig is the admin configuration impersonating user, without
// client-side rate limits: load tests measure Steward, not client-go's
// token bucket. warnings receives the API server's warning headers.
func userConfig(user string, groups []string, warnings rest.WarningHandler) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.RateLimiter = nil
	if warnings != nil {
		cfg.WarningHandler = warnings
	}
	return cfg
}

func userClient(t testing.TB, user string, groups []string, warnings rest.WarningHandler) client.Client {
	t.Helper()
	c, err := client.New(userConfig(user, groups, warnings), client.Options{Scheme: harness.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func userClientset(t testing.TB, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(userConfig(user, groups, nil))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// warningLog collects warning headers from every request of a client.
type warningLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warningLog) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// contains says whether any warning so far contains s.
func (w *warningLog) contains(s string) bool {
	for _, m := range w.all() {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// reset forgets the warnings so far, so the next request's stand alone.
func (w *warningLog) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = nil
}

// testNamespace creates a namespace that is removed when the test ends.
func testNamespace(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	return name
}

// keepStewardRunning restores the package's shared Steward when a test
// that stopped, froze or replaced it ends, whatever happened in between.
func keepStewardRunning(t testing.TB) {
	t.Helper()
	env.LogOnFailure(t)
	t.Cleanup(func() {
		s := env.Steward
		if s == nil {
			return
		}
		_ = s.Signal(syscall.SIGCONT)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if !s.Running() {
			if err := s.Restart(ctx); err != nil {
				t.Errorf("restarting steward after the test: %v", err)
			}
		}
	})
}

// restoreDefaultSteward restarts the package's shared Steward with the
// default configuration and registration when a test that ran it another
// way ends.
func restoreDefaultSteward(t testing.TB) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := env.RestartSteward(ctx, harness.DefaultConfig); err != nil {
			t.Errorf("restoring the default Steward: %v", err)
		}
	})
}

// logSince returns what Steward logged after offset bytes of its log.
func logSince(s *harness.Steward, offset int) string {
	log := s.Log()
	if offset > len(log) {
		return ""
	}
	return log[offset:]
}

// assertNoPanic fails when a log mentions a panic: a handler that panics
// has found input Steward does not handle.
func assertNoPanic(t testing.TB, log string) {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(strings.ToLower(line), "panic") {
			t.Errorf("steward logged a panic: %s", line)
		}
	}
}

// failOnPanic fails t when it ends if s logged a panic in the meantime.
func failOnPanic(t testing.TB, s *harness.Steward) {
	t.Helper()
	logStart := len(s.Log())
	t.Cleanup(func() { assertNoPanic(t, logSince(s, logStart)) })
}

// directToSteward returns the shared Steward and a client that calls its
// webhook server directly, as the API server does, for a test that sends
// what the API server never would; the test fails if Steward panics.
func directToSteward(t testing.TB) (*harness.Steward, *http.Client) {
	t.Helper()
	s := env.Steward
	failOnPanic(t, s)
	return s, webhookClient(pool(s.CABundle()))
}

// percentile returns the p-th percentile (0-100) of durations.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// testCA is the harness's CA, with its PEM at hand and failures reported
// to the test.
type testCA struct {
	*harness.CA
	pem []byte
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	ca, err := harness.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{CA: ca, pem: ca.PEM}
}

// issue signs a leaf certificate; serving ones are for 127.0.0.1 and
// localhost, the names the API server and the tests dial Steward by.
func (ca *testCA) issue(t testing.TB, name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, leaf *x509.Certificate) {
	t.Helper()
	certPEM, keyPEM, leaf, err := ca.Issue(name, usage)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM, leaf
}

func (ca *testCA) clientCert(t testing.TB, name string) tls.Certificate {
	t.Helper()
	c, k, _ := ca.issue(t, name, x509.ExtKeyUsageClientAuth)
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// writeServingPair replaces tls.key and then tls.crt in dir, each by an
// atomic rename, the way a rotation lands on a node: a reader sees either
// file whole, never half written.
func writeServingPair(t testing.TB, dir string, certPEM, keyPEM []byte) {
	t.Helper()
	for _, f := range []struct {
		name string
		data []byte
	}{{"tls.key", keyPEM}, {"tls.crt", certPEM}} {
		tmp := filepath.Join(dir, "."+f.name+".new")
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, f.name)); err != nil {
			t.Fatal(err)
		}
	}
}

func pool(pems ...[]byte) *x509.CertPool {
	p := x509.NewCertPool()
	for _, b := range pems {
		p.AppendCertsFromPEM(b)
	}
	return p
}

// servedLeaf is the certificate a TLS server at port presents right now.
func servedLeaf(port int) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", "127.0.0.1:"+strconv.Itoa(port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the served certificate
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// webhookClient talks to Steward's webhook server directly, as the API
// server does, trusting roots.
func webhookClient(roots *x509.CertPool, certs ...tls.Certificate) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2: false,
		},
	}
}

// reviewResult is Steward's answer to a direct request.
type reviewResult struct {
	status int
	raw    []byte
	review admissionv1.AdmissionReview
	// apiVersion is the answer's apiVersion, as written.
	apiVersion string
}

func (r reviewResult) String() string {
	return fmt.Sprintf("HTTP %d: %.600s", r.status, r.raw)
}

// postReview sends body to Steward's webhook path and decodes the answer.
func postReview(ctx context.Context, c *http.Client, url, contentType string, body io.Reader) (reviewResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return reviewResult{}, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		return reviewResult{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return reviewResult{}, err
	}
	res := reviewResult{status: resp.StatusCode, raw: raw}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &res.review); err != nil {
			return res, fmt.Errorf("answer is not an AdmissionReview: %w: %.300s", err, raw)
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
		}
		_ = json.Unmarshal(raw, &head)
		res.apiVersion = head.APIVersion
	}
	return res, nil
}

// stewardProc is an extra `steward serve` process beside the package's
// shared one, for tests that need flags the API server could not work with
// (client certificates, HTTP/2) or their own kubeconfig.
type stewardProc struct {
	port, healthPort, metricsPort int
	certDir, logPath              string
	ca                            *testCA
	cmd                           *exec.Cmd
	done                          chan struct{}
}

// procOptions say how to run an extra Steward.
type procOptions struct {
	// args are extra flags; they come last, so they win.
	args []string
	// kubeconfig replaces the admin kubeconfig when set.
	kubeconfig string
	// noWait returns as soon as the process started, without waiting for
	// /readyz.
	noWait bool
	// sharedCerts leaves the serving certificate to the shared Steward's
	// flags (self-managed mode: from the Secret all replicas share) instead
	// of issuing one from the process's own CA; ca is nil then.
	sharedCerts bool
}

// startStewardProc runs the harness's steward binary with the shared
// Steward's flags, its own ports and (unless o.sharedCerts) a serving
// certificate from its own CA, and stops it when the test ends. With the
// shared Steward's flags it is another replica of the same Deployment.
func startStewardProc(t *testing.T, ctx context.Context, o procOptions) *stewardProc {
	t.Helper()
	dir := t.TempDir()
	p := &stewardProc{certDir: filepath.Join(dir, "certs"), logPath: filepath.Join(dir, "steward.log"), done: make(chan struct{})}
	for _, port := range []*int{&p.port, &p.healthPort, &p.metricsPort} {
		var err error
		if *port, err = harness.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(p.certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if !o.sharedCerts {
		p.ca = newTestCA(t, "steward-extra-ca")
		c, k, _ := p.ca.issue(t, "steward-extra", x509.ExtKeyUsageServerAuth)
		writeServingPair(t, p.certDir, c, k)
	}

	args := append(env.Steward.Args(),
		"--port", strconv.Itoa(p.port),
		"--cert-dir", p.certDir,
		"--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(p.metricsPort),
		"--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(p.healthPort))
	if o.kubeconfig != "" {
		args = append(args, "--kubeconfig", o.kubeconfig)
	}
	args = append(args, o.args...)
	logFile, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	p.cmd = exec.Command(args[0], args[1:]...)
	p.cmd.Env = append(os.Environ(), env.Steward.Env()...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = extraStewardProcAttr()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting an extra steward: %v", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("extra steward on port %d, log (last lines):\n%s", p.port, tail(p.log(), 40))
		}
	})
	if !o.noWait {
		if err := p.waitReady(ctx, harness.ReadyTimeout); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (p *stewardProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(harness.StopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *stewardProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// readyz returns the status code of /readyz?verbose and its body.
func (p *stewardProc) readyz() (int, string, error) {
	return getStatus(fmt.Sprintf("http://127.0.0.1:%d/readyz?verbose", p.healthPort))
}

func (p *stewardProc) waitReady(ctx context.Context, timeout time.Duration) error {
	return harness.Poll(ctx, timeout, func() error {
		if p.exited() {
			return errors.New("the extra steward exited:\n" + tail(p.log(), 20))
		}
		code, body, err := p.readyz()
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("readyz %d: %s", code, body)
		}
		return nil
	})
}

func (p *stewardProc) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// servedCert returns the serving certificate in the process's --cert-dir.
func (p *stewardProc) servedCert() []byte {
	b, _ := os.ReadFile(filepath.Join(p.certDir, "tls.crt"))
	return b
}

func (p *stewardProc) url(path string) string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", p.port, path)
}

func getStatus(url string) (int, string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// The ConfigMap kind and resource, for direct requests.
var (
	configMapKind = metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	configMaps    = metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// janeRequest is the request the API server sends Steward when jane, a
// person in group devs, writes the object namespace/name: obj is the new
// object and old the stored one, nil where the operation has none.
func janeRequest(op admissionv1.Operation, kind metav1.GroupVersionKind, resource metav1.GroupVersionResource, namespace, name string, obj, old []byte) admissionv1.AdmissionRequest {
	return admissionv1.AdmissionRequest{
		UID:       types.UID(uniqueName(name)),
		Kind:      kind,
		Resource:  resource,
		Namespace: namespace,
		Name:      name,
		Operation: op,
		UserInfo:  authenticationv1.UserInfo{Username: "jane", Groups: []string{"devs", "system:authenticated"}},
		Object:    runtime.RawExtension{Raw: obj},
		OldObject: runtime.RawExtension{Raw: old},
	}
}

// reviewJSON builds a v1 AdmissionReview for a direct request.
func reviewJSON(t testing.TB, req admissionv1.AdmissionRequest) []byte {
	t.Helper()
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &req,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// takeDown takes Steward down the way outage names ("stopped": the
// process is gone; "hung": SIGSTOP, connections accepted and never
// answered) and returns what brings it back.
func takeDown(t testing.TB, ctx context.Context, outage string) (bringBack func()) {
	t.Helper()
	s := env.Steward
	switch outage {
	case "stopped":
		if err := s.Stop(); err != nil {
			t.Fatalf("stopping steward: %v", err)
		}
		return func() {
			if err := s.Restart(ctx); err != nil {
				t.Fatalf("restarting steward: %v", err)
			}
		}
	case "hung":
		if err := s.Signal(syscall.SIGSTOP); err != nil {
			t.Fatalf("freezing steward: %v", err)
		}
		return func() {
			if err := s.Signal(syscall.SIGCONT); err != nil {
				t.Fatalf("resuming steward: %v", err)
			}
		}
	}
	t.Fatalf("unknown outage %q", outage)
	return nil
}
