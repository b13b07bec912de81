package audit

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Timings of an election.
type Timings struct {
	// LeaseDuration is how long the other replicas wait, from the last
	// renewal they saw, before they take the Lease over.
	LeaseDuration time.Duration
	// RenewDeadline is how long the replica that audits keeps trying to
	// renew the Lease before it stops auditing.
	RenewDeadline time.Duration
	// RetryPeriod is how often a replica tries to take or renew the Lease.
	RetryPeriod time.Duration
}

// DefaultTimings are those of controller-runtime's and the
// kube-controller-manager's elections: a replica stops auditing 10 s
// after it last renewed, 5 s before another may take over.
func DefaultTimings() Timings {
	return Timings{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// Election elects, among the replicas of `steward serve`, the one that
// audits, through the Lease LeaseName in Steward's namespace. Only the
// Runner campaigns: losing the Lease stops the audit and nothing else, so
// a replica that cannot renew it (the API server is unreachable for a
// while, another replica took it over) keeps serving webhooks.
type Election struct {
	lock    resourcelock.Interface
	lease   string
	timings Timings
}

// NewElection campaigns for the Lease LeaseName in namespace as identity
// (Identity), with timings.
func NewElection(leases coordinationv1client.LeasesGetter, namespace, identity string, timings Timings) (*Election, error) {
	return NewLeaseElection(leases, namespace, LeaseName, identity, timings)
}

// NewLeaseElection campaigns for the Lease lease in namespace: another
// task than the audit that one replica at a time must do (keeping
// Steward's registration) campaigns for its own Lease, so neither waits
// on the other.
func NewLeaseElection(leases coordinationv1client.LeasesGetter, namespace, lease, identity string, timings Timings) (*Election, error) {
	e := &Election{
		lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: lease},
			Client:     leases,
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
		},
		lease:   lease,
		timings: timings,
	}
	// Checked now, so a campaign never fails on its configuration.
	if _, err := e.elector(func(context.Context) {}, func() {}); err != nil {
		return nil, fmt.Errorf("leader election for the Lease %s: %w", lease, err)
	}
	return e, nil
}

// Campaign waits for the Lease and runs lead while this replica holds
// it (see campaign); it reports whether this replica led.
func (e *Election) Campaign(ctx context.Context, log logr.Logger, lead func(context.Context)) bool {
	return e.campaign(ctx, log, lead)
}

// Identity names this replica in the Lease: its host name (the Pod's
// name) and a random suffix, as controller-runtime's elections do, so a
// restarted replica is not taken for the one before.
func Identity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("audit leader election: host name: %w", err)
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// elector is one campaign: it calls started once it holds the Lease, with
// a context that ends when it stops holding it, and stopped when the
// campaign ends, leading or not. The Lease is released when ctx ends.
func (e *Election) elector(started func(context.Context), stopped func()) (*leaderelection.LeaderElector, error) {
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            e.lock,
		Name:            e.lease,
		LeaseDuration:   e.timings.LeaseDuration,
		RenewDeadline:   e.timings.RenewDeadline,
		RetryPeriod:     e.timings.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks:       leaderelection.LeaderCallbacks{OnStartedLeading: started, OnStoppedLeading: stopped},
	})
}

// campaign waits for the Lease and, once this replica holds it, runs lead
// until it stops holding it or ctx ends; it returns only after lead has
// returned and, when ctx ended, the Lease was released. It reports
// whether this replica led.
func (e *Election) campaign(ctx context.Context, log logr.Logger, lead func(context.Context)) bool {
	// client-go logs the election through the logger in the context.
	ctx = logr.NewContext(ctx, log)
	leading := make(chan context.Context, 1)
	elector, err := e.elector(func(leadCtx context.Context) { leading <- leadCtx }, func() {})
	if err != nil { // checked by NewElection; kept from panicking all the same
		log.Error(err, "cannot campaign for the Lease; this replica does not audit")
		<-ctx.Done()
		return false
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		elector.Run(ctx)
	}()
	select {
	case <-done:
		return false
	case leadCtx := <-leading:
		// Run cancels leadCtx when renewing fails, before it returns;
		// lead runs here, not in client-go's goroutine, so the next
		// campaign starts only once this one's audit has stopped.
		lead(leadCtx)
		<-done
		return true
	}
}
