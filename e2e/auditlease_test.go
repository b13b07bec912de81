package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// Leader election timings of `steward serve` (audit.DefaultTimings).
const (
	// leaseRenewDeadline is how long the auditing replica tries to renew
	// before it stops auditing.
	leaseRenewDeadline = 10 * time.Second
	// leaseRetryPeriod is how often a replica tries to take the Lease.
	leaseRetryPeriod = 2 * time.Second
)

// otherReplica is the identity this test takes the Lease over as.
const otherReplica = "e2e-other-replica"

// TestAuditStopsWhenAnotherReplicaTakesTheLease takes the Lease
// steward-leader from the auditing Steward, as a replica that thinks it
// leads would, and proves that Steward stops auditing and nothing else:
// the process keeps running and ready, its webhooks keep answering (it
// records the suspension of a Kustomization), and no pass writes a report
// for that new finding. Once the Lease is free again, Steward takes it
// back and reports the finding.
func TestAuditStopsWhenAnotherReplicaTakesTheLease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	startAuditingSteward(t, ctx)
	t.Cleanup(func() {
		// Should the test stop while the Lease is taken, the next Steward
		// must not wait an hour for it.
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: harness.StewardNamespace, Name: "steward-leader"}}
		if err := env.Client.Delete(context.Background(), lease); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Lease: %v", err)
		}
	})
	steward := env.Steward
	leader := func(want float64) func() error {
		return func() error {
			v, err := steward.Counter("steward_audit_leader", nil)
			if err != nil {
				return err
			}
			if v != want {
				return fmt.Errorf("steward_audit_leader = %v, want %v", v, want)
			}
			return nil
		}
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		if err := leader(1)(); err != nil {
			return err
		}
		if holder := leaseHolder(ctx, t); !strings.HasPrefix(holder, host+"_") {
			return fmt.Errorf("the Lease is held by %q, want this host's Steward (%s_...)", holder, host)
		}
		return nil
	})

	// Another replica takes the Lease for an hour.
	setLease(ctx, t, func(spec *coordinationv1.LeaseSpec) {
		now := metav1.NewMicroTime(time.Now())
		spec.HolderIdentity = ptr.To(otherReplica)
		spec.LeaseDurationSeconds = ptr.To[int32](3600)
		spec.AcquireTime, spec.RenewTime = &now, &now
	})
	taken := time.Now()
	harness.Eventually(t, leaseRenewDeadline+3*leaseRetryPeriod+5*time.Second, leader(0))
	t.Logf("Steward stopped auditing %s after the Lease was taken", time.Since(taken).Round(100*time.Millisecond))
	if holder := leaseHolder(ctx, t); holder != otherReplica {
		t.Fatalf("Steward took the Lease back from %s while it was valid: held by %q", otherReplica, holder)
	}

	// Its webhooks still answer: suspending a Kustomization goes through
	// Steward, which records who did it.
	ns := testNamespace(t, ctx, fmt.Sprintf("audit-lease-%d", time.Now().UnixNano()%1_000_000))
	alice, err := env.As("alice")
	if err != nil {
		t.Fatal(err)
	}
	ks := harness.SuspendedKustomization(ns, "web")
	if err := alice.Create(ctx, ks); err != nil {
		t.Fatalf("creating a suspended Kustomization while Steward does not hold the Lease: %v", err)
	}
	if ks.GetAnnotations()[snSuspendedBy] != "alice" {
		t.Fatalf("Steward's webhook did not record the suspension while another replica held the Lease: annotations %v", ks.GetAnnotations())
	}

	// A pass (every 10 s) would report it; none runs.
	time.Sleep(15 * time.Second)
	reports := &unstructured.UnstructuredList{}
	reports.SetAPIVersion("wgpolicyk8s.io/v1alpha2")
	reports.SetKind("PolicyReportList")
	if err := env.Client.List(ctx, reports, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing PolicyReports in %s (the CRDs must be served for this check to mean anything): %v", ns, err)
	}
	for _, r := range reports.Items {
		t.Errorf("a Steward that does not hold the Lease wrote PolicyReport %s/%s: %v", ns, r.GetName(), harness.ReportResults(&r))
	}
	if !steward.Running() {
		t.Fatalf("Steward exited after losing the Lease: %v", steward.ExitErr())
	}
	resp, err := insecureClient.Get(steward.HealthURL("/readyz"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/readyz answers %d after losing the Lease, want 200", resp.StatusCode)
	}

	// The other replica lets the Lease go: Steward takes it and audits at
	// once.
	setLease(ctx, t, func(spec *coordinationv1.LeaseSpec) {
		spec.HolderIdentity = nil
		spec.LeaseDurationSeconds = ptr.To[int32](1)
	})
	harness.Eventually(t, 30*time.Second, func() error {
		r, err := policyReport(ctx, ns)
		if err != nil {
			return err
		}
		if got := harness.ReportResults(r); len(got) != 1 || got[0] != "suspendnotice/suspended/warn/Kustomization/web" {
			return fmt.Errorf("PolicyReport %s/steward holds %v, want the suspended Kustomization", ns, got)
		}
		return nil
	})
	if err := leader(1)(); err != nil {
		t.Error(err)
	}
	if holder := leaseHolder(ctx, t); !strings.HasPrefix(holder, host+"_") {
		t.Errorf("after the Lease was freed it is held by %q, want this host's Steward", holder)
	}
}

// leaseHolder reads who holds the Lease steward-leader.
func leaseHolder(ctx context.Context, t *testing.T) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: harness.StewardNamespace, Name: "steward-leader"}, lease); err != nil {
		t.Fatalf("reading the Lease steward-leader: %v", err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// setLease changes the Lease steward-leader as a competing replica would,
// retrying when Steward renewed it in between.
func setLease(ctx context.Context, t *testing.T, change func(*coordinationv1.LeaseSpec)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease := &coordinationv1.Lease{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: harness.StewardNamespace, Name: "steward-leader"}, lease); err != nil {
			return err
		}
		change(&lease.Spec)
		return env.Client.Update(ctx, lease)
	})
	if err != nil {
		t.Fatalf("updating the Lease steward-leader: %v", err)
	}
}
