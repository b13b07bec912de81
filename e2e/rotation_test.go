package e2e

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestServingCertificateRotatesWithoutRestartOrFailedCalls replaces the
// serving certificate in --cert-dir (the files mode: cert-manager's Secret,
// mounted) while clients keep making guarded writes through the API server,
// first with a new certificate from the same CA, then with one from a new
// CA, the caBundle trusting both CAs during the overlap and only the new
// one after it. Steward must pick up each certificate without restarting,
// and every write must get Steward's answer: zero failed admission calls.
// (Self-managed mode rotates its own CA; TestSelfManagedCertificates covers
// that.)
func TestServingCertificateRotatesWithoutRestartOrFailedCalls(t *testing.T) {
	keepStewardRunning(t)
	restoreHarnessCerts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := env.Steward
	pid := s.PID()
	ns := testNamespace(t, ctx, "rotation")
	writes := setupGuardedWrites(t, ctx, ns)

	// A rotation only shows on new TLS connections, and the API server
	// reuses its connections: a certificate nobody trusts would go
	// unnoticed while old connections last. So after every step the
	// webhooks are pointed at a new TCP proxy in front of Steward, on a
	// port the API server has never dialled: every call after the step
	// runs over connections whose handshake checked the certificate
	// served now against the caBundle registered now. The proxy counts
	// those connections.
	caA := newTestCA(t, "rotation-ca-a")
	caB := newTestCA(t, "rotation-ca-b")
	bundle := concat(s.CABundle(), caA.pem)
	pointAt := func(p *tcpProxy) {
		t.Helper()
		rewriteClientConfigs(t, ctx, func(cc *admissionregistrationv1.WebhookClientConfig) {
			u, err := url.Parse(*cc.URL)
			if err != nil {
				t.Fatal(err)
			}
			u.Host = "127.0.0.1:" + strconv.Itoa(p.port())
			us := u.String()
			cc.URL = &us
			cc.CABundle = bundle
		})
	}
	pointAt(startTCPProxy(t, s.Port()))

	load := startGuardedLoad(t, ctx, ns, 4, writes)
	steps := []struct {
		name   string
		bundle [][]byte
		issuer *testCA
	}{
		{"ServeACertificateFromCAA", nil, caA},
		{"ServeANewCertificateFromTheSameCA", nil, caA},
		{"TrustCAAAndCAB", [][]byte{caA.pem, caB.pem}, nil},
		{"ServeACertificateFromCAB", nil, caB},
		{"TrustOnlyCAB", [][]byte{caB.pem}, nil},
	}
	var last *x509.Certificate
	for _, step := range steps {
		if step.bundle != nil {
			bundle = concat(step.bundle...)
		}
		if step.issuer != nil {
			c, k, leaf := step.issuer.issue(t, "steward", x509.ExtKeyUsageServerAuth)
			writeServingPair(t, s.CertDir(), c, k)
			waitServed(t, ctx, s.Port(), leaf)
			last = leaf
		}
		p := startTCPProxy(t, s.Port())
		pointAt(p)
		writesBefore := load.total()
		harness.Eventually(t, time.Minute, func() error {
			if w, c := load.total()-writesBefore, p.accepted(); w < 50 || c == 0 {
				return fmt.Errorf("only %d guarded writes over %d new connections since step %s", w, c, step.name)
			}
			return nil
		})
		t.Logf("%s: %d guarded writes so far, %d failed; %d connections through the new proxy", step.name, load.total(), load.failed(), p.accepted())
	}
	load.stop()

	if n := load.failed(); n > 0 {
		t.Errorf("%d of %d guarded writes failed during rotation; first failures:\n%s", n, load.total(), strings.Join(load.failures(5), "\n"))
	}
	if s.PID() != pid || !s.Running() {
		t.Errorf("steward restarted (pid %d, was %d): rotation must not need a restart", s.PID(), pid)
	}
	if got, err := servedLeaf(s.Port()); err != nil || !got.Equal(last) {
		t.Errorf("after rotation Steward serves %v (%v), want the certificate from CA B", got.Subject, err)
	}
}

// restoreHarnessCerts registers Steward afresh when the test ends: a new
// process with the harness's certificates and caBundle.
func restoreHarnessCerts(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		_ = env.Steward.Signal(syscall.SIGCONT)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := env.RestartSteward(ctx, harness.DefaultConfig); err != nil {
			t.Errorf("restoring steward's certificates: %v", err)
		}
	})
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
		if len(p) > 0 && p[len(p)-1] != '\n' {
			out = append(out, '\n')
		}
	}
	return out
}

// waitServed waits until Steward's webhook server presents leaf.
func waitServed(t *testing.T, ctx context.Context, port int, leaf *x509.Certificate) {
	t.Helper()
	if err := harness.Poll(ctx, 30*time.Second, func() error {
		got, err := servedLeaf(port)
		if err != nil {
			return err
		}
		if !got.Equal(leaf) {
			return fmt.Errorf("still serving serial %s, want %s", got.SerialNumber, leaf.SerialNumber)
		}
		return nil
	}); err != nil {
		t.Fatalf("steward did not pick up the new certificate: %v", err)
	}
}

// guardedLoad keeps making guarded writes from several goroutines and
// counts every one that did not get Steward's answer.
type guardedLoad struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	n, bad  atomic.Int64
	mu      sync.Mutex
	samples []string
}

// startGuardedLoad runs workers that alternate a hand edit of a
// Fleet-managed object (fleetguard, failurePolicy Fail: Steward's denial
// is the only right answer) and a write through a deprecated Flux version
// (apimigration, failurePolicy Ignore: only Steward's warning tells its
// answer from a silent allow while it is unreachable).
func startGuardedLoad(t *testing.T, ctx context.Context, ns string, workers int, writes map[string]guardedWrite) *guardedLoad {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	l := &guardedLoad{cancel: cancel}
	t.Cleanup(l.stop)
	for w := range workers {
		warnings := &warningLog{}
		jane := userClient(t, "jane", []string{"devs"}, warnings)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				var err error
				if i%2 == 0 {
					err = checkDenied(writes["fleetguard.steward.dev"](ctx))
				} else {
					before := len(warnings.all())
					err = jane.Create(ctx, fluxKustomization(ns, fmt.Sprintf("load-%d-%d", w, i), "v1beta2", false), client.DryRunAll)
					switch {
					case err != nil && strings.Contains(err.Error(), "apimigration:"):
						err = nil
					case err == nil && !hasWarning(warnings.all()[before:], "apimigration:"):
						err = errors.New("a deprecated Flux write was allowed without apimigration's warning: Steward did not answer")
					}
				}
				l.record(ctx, err)
			}
		}()
	}
	return l
}

func (l *guardedLoad) record(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	l.n.Add(1)
	if err != nil {
		l.bad.Add(1)
		l.mu.Lock()
		l.samples = append(l.samples, time.Now().Format("15:04:05.000")+" "+err.Error())
		l.mu.Unlock()
	}
}

func checkDenied(err error) error {
	if err == nil {
		return errors.New("a hand edit of a Fleet-managed object was allowed")
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "fleetguard:") {
		return fmt.Errorf("not fleetguard's denial: %w", err)
	}
	return nil
}

func hasWarning(warnings []string, prefix string) bool {
	for _, w := range warnings {
		if strings.HasPrefix(w, prefix) {
			return true
		}
	}
	return false
}

func (l *guardedLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

func (l *guardedLoad) total() int64  { return l.n.Load() }
func (l *guardedLoad) failed() int64 { return l.bad.Load() }

func (l *guardedLoad) failures(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.samples[:min(n, len(l.samples))]
}
