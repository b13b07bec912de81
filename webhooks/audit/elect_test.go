package audit

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// countingRule counts the audit passes that asked it, from any goroutine.
type countingRule struct{ asked atomic.Int32 }

func (c *countingRule) Handle(context.Context, *rule.Request) admission.Response {
	return admission.Allowed("")
}
func (c *countingRule) Spec() rule.Spec { return rule.Spec{} }
func (c *countingRule) Audit(context.Context, client.Reader) ([]rule.Finding, error) {
	c.asked.Add(1)
	return []rule.Finding{finding("suspended", rule.AuditWarn, "apps", "web")}, nil
}

// fastTimings lose a Lease 300 ms after the last renewal and try every
// 50 ms. Lease durations are whole seconds.
var fastTimings = Timings{LeaseDuration: time.Second, RenewDeadline: 300 * time.Millisecond, RetryPeriod: 50 * time.Millisecond}

const testNamespace = "steward-system"

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func holderOf(t *testing.T, kube *fake.Clientset) string {
	t.Helper()
	lease, err := kube.CoordinationV1().Leases(testNamespace).Get(context.Background(), LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the Lease: %v", err)
	}
	return func() string {
		if lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}()
}

// TestRunnerAuditsOnlyWhileItHoldsTheLease runs a Runner with an Election
// against a Lease another replica holds, then gives it up, cuts the API
// server off and brings it back, and finally stops the Runner. The Runner
// audits (at once, one pass per term with a one-hour interval) exactly
// while it holds the Lease, campaigns again after losing it without
// returning, and releases the Lease when stopped.
func TestRunnerAuditsOnlyWhileItHoldsTheLease(t *testing.T) {
	kube := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: LeaseName},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("other-replica"),
			LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	})
	var apiDown atomic.Bool
	kube.PrependReactor("*", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if apiDown.Load() {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	election, err := NewElection(kube.CoordinationV1(), testNamespace, "this-replica", fastTimings)
	if err != nil {
		t.Fatal(err)
	}
	suspend := &countingRule{}
	auditors := []Auditor{{Name: "suspendnotice", Auditor: suspend}}
	p, _ := newFakePublisher()
	m := NewMetrics()
	r := NewRunner(func() ([]Auditor, time.Duration) { return auditors, time.Hour }, nil, p, m, logr.Discard()).Elect(election)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- r.Start(ctx) }()
	running := func(t *testing.T) {
		t.Helper()
		select {
		case err := <-stopped:
			t.Fatalf("the Runner returned (%v) while its context was live: it must campaign again", err)
		default:
		}
	}
	state := func(wantAsked int32, wantLeader float64) func() error {
		return func() error {
			if n, l := suspend.asked.Load(), leaderGauge(m); n != wantAsked || l != wantLeader {
				return fmt.Errorf("passes %d, steward_audit_leader %v; want %d and %v", n, l, wantAsked, wantLeader)
			}
			return nil
		}
	}

	// Another replica holds the Lease: no pass, however long we wait.
	time.Sleep(20 * fastTimings.RetryPeriod)
	if err := state(0, 0)(); err != nil {
		t.Fatalf("while another replica holds the Lease: %v", err)
	}
	running(t)

	// It lets the Lease go (as client-go's release does): this replica
	// takes it and audits at once.
	lease, err := kube.CoordinationV1().Leases(testNamespace).Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease.Spec.HolderIdentity = nil
	if _, err := kube.CoordinationV1().Leases(testNamespace).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "once the Lease is free", state(1, 1))
	if h := holderOf(t, kube); h != "this-replica" {
		t.Fatalf("the Lease is held by %q, want this-replica", h)
	}
	if n := testutil.CollectAndCount(m, "steward_audit_results"); n != 3 {
		t.Errorf("the auditing replica reports %d steward_audit_results series, want 3 (one rule's pass, fail and warn)", n)
	}

	// The API server cannot be reached: renewing fails for RenewDeadline,
	// and the Runner stops auditing without returning.
	apiDown.Store(true)
	eventually(t, "once the Lease cannot be renewed", state(1, 0))
	running(t)
	if n := testutil.CollectAndCount(m, "steward_audit_results", "steward_audit_reports_published"); n != 0 {
		t.Errorf("a replica that stopped auditing reports %d steward_audit_results and _reports_published series, want none", n)
	}

	// The API server is back: the Runner holds the Lease again and audits
	// at once.
	apiDown.Store(false)
	eventually(t, "once the API server is back", state(2, 1))
	running(t)

	// Stopping releases the Lease.
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Start returned %v when stopped, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Runner did not return within 5s of its context ending")
	}
	if h := holderOf(t, kube); h != "" {
		t.Errorf("after stopping, the Lease is held by %q; want it released", h)
	}
	if l := leaderGauge(m); l != 0 {
		t.Errorf("steward_audit_leader = %v after stopping, want 0", l)
	}
}

// TestRunnerWithoutElectionAuditsAtOnce proves --leader-elect=false: the
// Runner audits without any Lease, and says it leads.
func TestRunnerWithoutElectionAuditsAtOnce(t *testing.T) {
	suspend := &countingRule{}
	auditors := []Auditor{{Name: "suspendnotice", Auditor: suspend}}
	p, _ := newFakePublisher()
	m := NewMetrics()
	r := NewRunner(func() ([]Auditor, time.Duration) { return auditors, time.Hour }, nil, p, m, logr.Discard())
	if l := leaderGauge(m); l != 0 {
		t.Errorf("steward_audit_leader = %v before the Runner starts, want 0", l)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- r.Start(ctx) }()
	eventually(t, "without election", func() error {
		if n, l := suspend.asked.Load(), leaderGauge(m); n != 1 || l != 1 {
			return fmt.Errorf("passes %d, steward_audit_leader %v; want 1 and 1", n, l)
		}
		return nil
	})
	cancel()
	if err := <-stopped; err != nil {
		t.Errorf("Start returned %v, want nil", err)
	}
}

func TestNewElectionRefusesTimingsClientGoWouldRefuse(t *testing.T) {
	kube := fake.NewClientset()
	bad := Timings{LeaseDuration: time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond}
	if _, err := NewElection(kube.CoordinationV1(), testNamespace, "this-replica", bad); err == nil {
		t.Error("a renew deadline longer than the lease must be refused when the election is built, not when it campaigns")
	}
	if _, err := NewElection(kube.CoordinationV1(), testNamespace, "", DefaultTimings()); err == nil {
		t.Error("an empty identity must be refused")
	}
	if _, err := NewElection(kube.CoordinationV1(), testNamespace, "this-replica", DefaultTimings()); err != nil {
		t.Errorf("the default timings: %v", err)
	}
}

// leaderGauge reads steward_audit_leader from m.
func leaderGauge(m *Metrics) float64 {
	ch := make(chan prometheus.Metric, 64)
	m.Collect(ch)
	close(ch)
	for metric := range ch {
		if metric.Desc() == m.leader {
			return dtoOf(metric).GetGauge().GetValue()
		}
	}
	return -1
}
