package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Replicas are Steward processes of one configuration serving one
// certificate behind a Spreader, as a Deployment's Pods are behind its
// Service: the webhook configurations name the Spreader, and the API
// server's calls go to whichever replica the Spreader hands each new
// connection. Each replica has its own ports, directory, log and
// $POD_NAME. Start and stop them with their Steward methods (Stop sends
// SIGTERM and waits; Signal(syscall.SIGKILL) kills; Restart starts the
// same replica again on the same ports, as the kubelet restarts a
// container), and use Add and Remove for Pods that come and go.
type Replicas struct {
	// Spreader is the Service in front of the replicas.
	Spreader *Spreader

	env  *Env
	opts StewardOptions

	mu      sync.Mutex
	members []*Steward
	// all is every replica ever started, for Stop.
	all []*Steward
}

// StartReplicas runs n Stewards with opts (which must let the harness
// provide certificates: the replicas share one it creates), puts them
// behind a Spreader with spreader's settings, registers the rendered
// webhook configurations pointed at the Spreader, and returns once every
// replica is ready and in the rotation and the API server calls them.
func (e *Env) StartReplicas(ctx context.Context, n int, opts StewardOptions, spreader SpreaderOptions) (*Replicas, error) {
	if !opts.ProvideCerts {
		return nil, errors.New("replicas need certificates the harness provides (ProvideCerts)")
	}
	if n < 1 {
		return nil, fmt.Errorf("%d replicas: want at least one", n)
	}
	cert, err := NewServingCert()
	if err != nil {
		return nil, err
	}
	opts.ServingCert = &cert
	opts.Host = "127.0.0.1"
	sp, err := StartSpreader(spreader)
	if err != nil {
		return nil, err
	}
	if opts.KeepRegistration {
		opts.RegistrationURL = "https://" + net.JoinHostPort(opts.Host, strconv.Itoa(sp.Port()))
	}
	r := &Replicas{Spreader: sp, env: e, opts: opts}
	e.mu.Lock()
	e.replicas = append(e.replicas, r)
	e.mu.Unlock()
	fail := func(err error) (*Replicas, error) {
		tails := ""
		for _, s := range r.Members() {
			tails += fmt.Sprintf("\n--- %s log (last lines) ---\n%s", s.PodName(), s.LogTail(30))
		}
		_ = r.Stop()
		return nil, fmt.Errorf("%w%s", err, tails)
	}
	for range n {
		s, err := e.newSteward(ctx, opts)
		if err != nil {
			return fail(err)
		}
		r.opts = s.opts
		if err := r.launch(s); err != nil {
			return fail(err)
		}
	}
	ep := endpoint{host: "127.0.0.1", port: sp.Port(), caBundle: cert.CA}
	if err := e.registerWebhooks(ctx, ep, r.opts.Namespace, r.opts.Webhooks); err != nil {
		return fail(err)
	}
	for _, s := range r.Members() {
		if err := s.waitReady(ctx, s.readyTimeout); err != nil {
			return fail(fmt.Errorf("replica %s: %w", s.PodName(), err))
		}
	}
	if err := sp.WaitInRotation(10*time.Second, r.names()...); err != nil {
		return fail(err)
	}
	if err := e.WaitWebhooksEffective(ctx, PropagationTimeout); err != nil {
		return fail(err)
	}
	return r, nil
}

// launch starts a prepared replica and puts it behind the Spreader.
func (r *Replicas) launch(s *Steward) error {
	r.mu.Lock()
	r.members = append(r.members, s)
	r.all = append(r.all, s)
	r.mu.Unlock()
	if err := s.start(); err != nil {
		return err
	}
	r.Spreader.Add(s.PodName(), s.port, s.HealthURL("/readyz"))
	return nil
}

// Add starts one more replica, as a ReplicaSet creates a Pod to replace
// an evicted one, and returns once it is ready and in the rotation.
func (r *Replicas) Add(ctx context.Context) (*Steward, error) {
	s, err := r.env.newSteward(ctx, r.opts)
	if err != nil {
		return nil, err
	}
	if err := r.launch(s); err != nil {
		return nil, err
	}
	if err := s.waitReady(ctx, s.readyTimeout); err != nil {
		return nil, fmt.Errorf("replica %s: %w\n--- its log (last lines) ---\n%s", s.PodName(), err, s.LogTail(40))
	}
	if err := r.Spreader.WaitInRotation(10*time.Second, s.PodName()); err != nil {
		return nil, err
	}
	return s, nil
}

// Remove takes a replica out of the set and from behind the Spreader, as
// a deleted Pod leaves its Service; it does not stop it.
func (r *Replicas) Remove(s *Steward) {
	r.Spreader.Remove(s.PodName())
	r.mu.Lock()
	defer r.mu.Unlock()
	r.members = slices.DeleteFunc(r.members, func(m *Steward) bool { return m == s })
}

// Members are the replicas in the set, oldest first.
func (r *Replicas) Members() []*Steward {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.members)
}

func (r *Replicas) names() []string {
	var out []string
	for _, s := range r.Members() {
		out = append(out, s.PodName())
	}
	return out
}

// WaitInRotation waits until every replica in the set is in the
// Spreader's rotation.
func (r *Replicas) WaitInRotation(timeout time.Duration) error {
	return r.Spreader.WaitInRotation(timeout, r.names()...)
}

// URL is the webhook URL of path as registered: through the Spreader.
func (r *Replicas) URL(path string) string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", r.Spreader.Port(), path)
}

// CABundle is the CA of the certificate every replica serves.
func (r *Replicas) CABundle() []byte { return r.opts.ServingCert.CA }

// Options are the options every replica is started with.
func (r *Replicas) Options() StewardOptions { return r.opts }

// LogOnFailure prints the tail of every replica's log when t fails.
func (r *Replicas) LogOnFailure(t testing.TB) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		r.mu.Lock()
		all := slices.Clone(r.all)
		r.mu.Unlock()
		for _, s := range all {
			t.Logf("replica %s log (last lines of %s, without decisions and failed probes):\n%s", s.PodName(), s.LogPath(), s.logTailWithout(30, `"msg":"admission decision"`, "healthz check failed"))
		}
	})
}

// Stop stops every replica ever started in the set, all at once, and the
// Spreader.
func (r *Replicas) Stop() error {
	r.mu.Lock()
	all := slices.Clone(r.all)
	r.mu.Unlock()
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Go(func() {
			_ = s.Signal(syscall.SIGCONT)
			if err := s.Stop(); err != nil {
				errs[i] = fmt.Errorf("%s: %w\n--- its log (last lines, without decisions and failed probes) ---\n%s", s.PodName(), err, s.logTailWithout(20, `"msg":"admission decision"`, "healthz check failed"))
			}
		})
	}
	wg.Wait()
	errs = append(errs, r.Spreader.Close())
	return errors.Join(errs...)
}

// kill sends SIGKILL to every replica.
func (r *Replicas) kill() {
	r.mu.Lock()
	all := slices.Clone(r.all)
	r.mu.Unlock()
	for _, s := range all {
		_ = s.Signal(syscall.SIGKILL)
	}
}
