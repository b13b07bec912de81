package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/stewardhq/steward/e2e/harness"
)

// shutdownDelay is the --shutdown-delay the test runs Steward with.
const shutdownDelay = 4 * time.Second

// TestGracefulShutdownUnderLoad sends SIGTERM to a Steward that is
// answering guarded writes from several clients through the API server.
//
// In a cluster, readiness going false takes the pod out of the Service's
// endpoints while it keeps serving for --shutdown-delay; here there is one
// process behind a URL, so writes that start after the listener closes
// must fail, and the test does not count them. It proves what Steward
// controls:
//   - /readyz reports unready at once, while /healthz stays healthy (the
//     kubelet must not restart a pod that is draining);
//   - during the delay every write still gets Steward's answer;
//   - a request in flight when the drain begins (its body still arriving)
//     is answered in full, and Steward exits cleanly afterwards.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	keepStewardRunning(t)
	restoreHarnessCerts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := env.RestartSteward(ctx, harness.DefaultConfig, "--shutdown-delay="+shutdownDelay.String(), "--shutdown-timeout=20s")
	if err != nil {
		t.Fatalf("starting steward with a shutdown delay: %v", err)
	}
	ns := testNamespace(t, ctx, "shutdown")
	writes := setupGuardedWrites(t, ctx, ns)
	guarded := writes["fleetguard.steward.dev"]
	failOnPanic(t, s)

	type outcome struct {
		start, end time.Time
		err        error
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
		wg       sync.WaitGroup
	)
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for loadCtx.Err() == nil {
				start := time.Now()
				err := checkDenied(guarded(loadCtx))
				mu.Lock()
				outcomes = append(outcomes, outcome{start, time.Now(), err})
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Second) // load is running

	if err := s.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sigterm := time.Now()
	drainBegins := sigterm.Add(shutdownDelay)

	// The signal is handled asynchronously; unready must follow within a
	// moment, long before the delay ends and the listener closes.
	if err := harness.Poll(ctx, time.Second, func() error {
		code, _, err := getStatus(s.HealthURL("/readyz"))
		if err != nil || code == http.StatusOK {
			return fmt.Errorf("/readyz after SIGTERM: %d %v, want unready", code, err)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if code, _, err := getStatus(s.HealthURL("/healthz")); err != nil || code != http.StatusOK {
		t.Errorf("/healthz during the shutdown delay: %d %v, want 200: a failing liveness probe would restart a draining pod", code, err)
	}

	// A request whose body is still arriving when the drain begins.
	time.Sleep(time.Until(drainBegins.Add(-time.Second)))
	inflight := startSlowReview(t, s)
	if err := harness.Poll(ctx, shutdownDelay+5*time.Second, func() error {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.Port()), time.Second)
		if err == nil {
			conn.Close()
			return fmt.Errorf("the listener still accepts connections %s after SIGTERM", time.Since(sigterm).Round(time.Millisecond))
		}
		return nil
	}); err != nil {
		t.Fatalf("the drain did not begin: %v", err)
	}
	drainBegan := time.Since(sigterm)
	if drainBegan < shutdownDelay {
		t.Errorf("the listener closed %s after SIGTERM, before the %s shutdown delay ended", drainBegan, shutdownDelay)
	}
	resp, err := inflight.finish()
	if err != nil {
		t.Errorf("the request in flight when the drain began was not answered: %v", err)
	} else if resp.Allowed || resp.Result == nil || !strings.HasPrefix(resp.Result.Message, "fleetguard:") {
		t.Errorf("the request in flight when the drain began got %+v, want fleetguard's denial", resp)
	}
	stopLoad()
	wg.Wait()

	select {
	case <-s.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("steward did not exit after the drain")
	}
	if err := s.ExitErr(); err != nil {
		t.Errorf("steward exited uncleanly: %v", err)
	}

	// Writes that started during the delay, with a margin before the
	// listener closed, must all have got Steward's answer.
	during, failed := 0, 0
	margin := 500 * time.Millisecond
	for _, o := range outcomes {
		if o.start.Before(sigterm) || !o.start.Before(drainBegins.Add(-margin)) {
			continue
		}
		during++
		if o.err != nil {
			failed++
			t.Errorf("a write %s after SIGTERM, during the shutdown delay, failed: %v", o.start.Sub(sigterm).Round(time.Millisecond), o.err)
		}
	}
	t.Logf("%d writes during the %s shutdown delay, %d failed; the listener closed %s after SIGTERM", during, shutdownDelay, failed, drainBegan.Round(time.Millisecond))
	if during < 20 {
		t.Errorf("only %d writes ran during the shutdown delay: the test did not load Steward", during)
	}
}

// slowReview is a request to Steward whose headers and first half of the
// body have been sent.
type slowReview struct {
	conn *tls.Conn
	rest []byte
}

// startSlowReview sends the headers and half the body of a review
// fleetguard must deny: a person creating an object with Fleet's
// ownership keys.
func startSlowReview(t *testing.T, s *harness.Steward) *slowReview {
	t.Helper()
	obj := mustJSON(t, map[string]any{"metadata": fleetManaged("default", "inflight")})
	body := reviewJSON(t, janeRequest(admissionv1.Create, configMapKind, configMaps, "default", "inflight", obj, nil))
	conn, err := dialTLS(s.Port(), &tls.Config{RootCAs: pool(s.CABundle()), MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("connecting to steward: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	head := fmt.Sprintf("POST /validate/fleetguard HTTP/1.1\r\nHost: steward\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	half := len(body) / 2
	if _, err := conn.Write(append([]byte(head), body[:half]...)); err != nil {
		t.Fatalf("sending the first half of the request: %v", err)
	}
	return &slowReview{conn: conn, rest: body[half:]}
}

// finish sends the rest of the body and reads Steward's answer.
func (r *slowReview) finish() (*admissionv1.AdmissionResponse, error) {
	if _, err := r.conn.Write(r.rest); err != nil {
		return nil, fmt.Errorf("sending the rest of the request: %w", err)
	}
	_ = r.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(r.conn), nil)
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	defer resp.Body.Close()
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil || review.Response == nil {
		return nil, fmt.Errorf("HTTP %d, not an AdmissionReview: %v", resp.StatusCode, err)
	}
	return review.Response, nil
}
