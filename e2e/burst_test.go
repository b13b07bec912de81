package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// burstSize is how many guarded writes go through the API server at once.
const burstSize = 500

// TestBurstOfGuardedWritesGetsStewardsAnswerEveryTime sends 500 guarded
// writes through the API server at the same moment, with one Steward
// process answering: half are creates of Fleet-managed objects by a user
// without Fleet's identity (fleetguard must deny each), half the same with
// the break-glass group (fleetguard must allow each, with its warning).
// Every write must get exactly that answer from Steward, none may fail on
// a timeout or connection error, and Steward's decision counter must have
// counted every one. The latency distribution is reported.
//
// The writers are members of system:masters, which the API server's
// priority and fairness exempts from queueing, so the burst measures
// Steward rather than the API server's fairness limits for one user.
// Steward serves an ECDSA P-256 certificate, the key type both of its
// certificate modes issue: a burst opens hundreds of TLS connections at
// once, and the handshakes are a large part of the cost.
func TestBurstOfGuardedWritesGetsStewardsAnswerEveryTime(t *testing.T) {
	keepStewardRunning(t)
	restoreHarnessCerts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := testNamespace(t, ctx, "burst")
	s := env.Steward
	ca := newTestCA(t, "burst-ca")
	c, k, leaf := ca.issue(t, "steward", x509.ExtKeyUsageServerAuth)
	rewriteClientConfigs(t, ctx, func(cc *admissionregistrationv1.WebhookClientConfig) { cc.CABundle = concat(s.CABundle(), ca.pem) })
	writeServingPair(t, s.CertDir(), c, k)
	waitServed(t, ctx, s.Port(), leaf)
	deniedBefore, err := s.Counter("steward_decisions_total", map[string]string{"rule": "fleetguard", "decision": "denied"})
	if err != nil {
		t.Fatal(err)
	}
	bypassedBefore, err := s.Counter("steward_decisions_total", map[string]string{"rule": "fleetguard", "decision": "bypassed"})
	if err != nil {
		t.Fatal(err)
	}

	warnings := &warningLog{}
	denied := userClient(t, "burst-user", []string{"system:masters"}, nil)
	allowed := userClient(t, "burst-breakglass", []string{"system:masters", breakGlass}, warnings)
	// One request from each client first, so the burst does not also
	// measure their connections to the API server.
	if err := denied.Create(ctx, &corev1.ConfigMap{ObjectMeta: fleetManaged(ns, "warm-up")}, client.DryRunAll); err == nil {
		t.Fatal("the warm-up write was allowed; want fleetguard's denial")
	}
	if err := allowed.Create(ctx, &corev1.ConfigMap{ObjectMeta: fleetManaged(ns, "warm-up")}, client.DryRunAll); err != nil {
		t.Fatalf("the break-glass warm-up write: %v", err)
	}
	warnings.reset()

	type outcome struct {
		elapsed time.Duration
		err     error
	}
	outcomes := make([]outcome, burstSize)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range burstSize {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cm := &corev1.ConfigMap{ObjectMeta: fleetManaged(ns, fmt.Sprintf("burst-%03d", i))}
			c := denied
			if i%2 == 1 {
				c = allowed
			}
			<-start
			t0 := time.Now()
			err := c.Create(ctx, cm)
			outcomes[i] = outcome{time.Since(t0), err}
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(began)

	var latencies []time.Duration
	failures := map[string]int{}
	for i, o := range outcomes {
		latencies = append(latencies, o.elapsed)
		var problem string
		switch {
		case i%2 == 0 && o.err == nil:
			problem = "allowed, want fleetguard's denial"
		case i%2 == 0 && !(apierrors.IsForbidden(o.err) && strings.Contains(o.err.Error(), "fleetguard: ConfigMap")):
			problem = "not fleetguard's denial: " + o.err.Error()
		case i%2 == 1 && o.err != nil:
			problem = "break-glass write failed: " + o.err.Error()
		}
		if problem != "" {
			failures[problem]++
		}
	}
	t.Logf("%d concurrent guarded writes through the API server in %s: p50 %s, p90 %s, p99 %s, max %s",
		burstSize, wall.Round(time.Millisecond), percentile(latencies, 50).Round(time.Millisecond), percentile(latencies, 90).Round(time.Millisecond),
		percentile(latencies, 99).Round(time.Millisecond), percentile(latencies, 100).Round(time.Millisecond))
	if sum, n, err := handlerSeconds(s, "/validate/fleetguard"); err == nil && n > 0 {
		t.Logf("Steward's own handling (controller-runtime's webhook latency, since start): %d requests, mean %s",
			int(n), time.Duration(sum/n*float64(time.Second)).Round(time.Microsecond))
	}
	for problem, n := range failures {
		t.Errorf("%d of %d writes: %s", n, burstSize, problem)
	}

	breakGlassWarnings := 0
	for _, w := range warnings.all() {
		if strings.Contains(w, "fleetguard: break-glass by burst-breakglass") {
			breakGlassWarnings++
		}
	}
	if breakGlassWarnings != burstSize/2 {
		t.Errorf("%d break-glass warnings, want one for each of the %d allowed writes", breakGlassWarnings, burstSize/2)
	}
	deniedAfter, err := s.Counter("steward_decisions_total", map[string]string{"rule": "fleetguard", "decision": "denied"})
	if err != nil {
		t.Fatal(err)
	}
	bypassedAfter, err := s.Counter("steward_decisions_total", map[string]string{"rule": "fleetguard", "decision": "bypassed"})
	if err != nil {
		t.Fatal(err)
	}
	// The warm-up writes are one more of each.
	if got := deniedAfter - deniedBefore; got != burstSize/2+1 {
		t.Errorf("Steward counted %v denials, want %d", got, burstSize/2+1)
	}
	if got := bypassedAfter - bypassedBefore; got != burstSize/2+1 {
		t.Errorf("Steward counted %v break-glass allows, want %d", got, burstSize/2+1)
	}
}

// handlerSeconds reads controller-runtime's webhook latency histogram for
// path: the total seconds spent and the number of requests.
func handlerSeconds(s *harness.Steward, path string) (sum, count float64, err error) {
	text, err := s.MetricsText()
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(text, "\n") {
		name, value, ok := strings.Cut(line, "{webhook=\""+path+"\"} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return 0, 0, err
		}
		switch name {
		case "controller_runtime_webhook_latency_seconds_sum":
			sum = v
		case "controller_runtime_webhook_latency_seconds_count":
			count = v
		}
	}
	return sum, count, nil
}
