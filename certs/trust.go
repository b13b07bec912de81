package certs

import (
	"context"
	"crypto/x509"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// fieldOwner is the field manager of Steward's writes to its webhook
// configurations.
const fieldOwner = "steward"

// conflictRetry is how soon a write that lost a race with another replica is
// retried; by then the watch has usually delivered the winner's version.
const conflictRetry = 200 * time.Millisecond

// trustReconciler runs on every replica. It keeps the CA bundle of Steward's
// webhook configurations trusting the Secret's current CA and the previous
// ones that are still valid, and it moves this replica's serving
// certificate files to the Secret's certificate only once the API servers
// trust the CA that signed it.
//
// Ordering is the whole point: the new CA goes into the bundle first; the
// replica serves the new certificate only after the bundle has carried the
// new CA for PropagationDelay; the old CA leaves the bundle only when it
// expires (and with it every certificate it signed). So at every moment the
// certificate each replica serves chains to a CA in the bundle.
type trustReconciler struct {
	reader client.Reader
	writer client.Writer
	opts   SelfManagedOptions
	log    logr.Logger
	now    func() time.Time

	mu sync.Mutex
	// firstSeen records when this replica first saw each CA in every
	// webhook configuration.
	firstSeen map[[32]byte]time.Time

	synced     chan struct{}
	syncedOnce sync.Once
}

func newTrustReconciler(reader client.Reader, writer client.Writer, opts SelfManagedOptions, log logr.Logger) *trustReconciler {
	return &trustReconciler{
		reader:    reader,
		writer:    writer,
		opts:      opts,
		log:       log,
		now:       time.Now,
		firstSeen: map[[32]byte]time.Time{},
		synced:    make(chan struct{}),
	}
}

// Reconcile ignores the request: every event (Secret or either webhook
// configuration) leads to the same work.
func (r *trustReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()

	secret := &corev1.Secret{}
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: r.opts.Namespace, Name: r.opts.SecretName}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			r.log.Info("waiting for the certificate Secret; the manifests ship it empty and Steward fills it", "secret", r.opts.Namespace+"/"+r.opts.SecretName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading Secret %s/%s: %w", r.opts.Namespace, r.opts.SecretName, err)
	}
	ca, ok := parseCA(secret.Data[caCertKey])
	if !ok {
		// The rotator has not filled the Secret yet; its write is an event.
		r.log.V(1).Info("waiting for the rotator to write a CA into the Secret")
		return reconcile.Result{}, nil
	}

	configs, err := r.webhookConfigs(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	var existing [][]byte
	for _, c := range configs {
		existing = append(existing, c.bundles()...)
	}
	desired := desiredBundle(ca, existing, now)
	for _, c := range configs {
		if allSame(c.bundles(), desired) {
			continue
		}
		c.setBundle(desired.pem())
		obj := c.object()
		if err := r.writer.Update(ctx, obj, client.FieldOwner(fieldOwner)); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return reconcile.Result{RequeueAfter: conflictRetry}, nil
			}
			return reconcile.Result{}, fmt.Errorf("injecting the CA bundle into %T %s: %w", obj, obj.GetName(), err)
		}
		r.log.Info("injected CA bundle", "webhookConfiguration", obj.GetName(), "kind", fmt.Sprintf("%T", obj), "cas", describe(desired))
	}
	r.markSeen(desired, now)

	want := keyPair{cert: secret.Data[certFile], key: secret.Data[keyFile]}
	serverAuth := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	if valid, err := rotator.ValidCert(secret.Data[caCertKey], want.cert, want.key, r.dnsName(), &serverAuth, now); !valid {
		// The rotator replaces an invalid or mismatched serving
		// certificate; its write to the Secret brings us back here.
		r.log.V(1).Info("the Secret's serving certificate is not usable yet", "reason", fmt.Sprint(err))
		return reconcile.Result{RequeueAfter: r.opts.CheckInterval}, nil
	}
	have, _ := readKeyPair(r.opts.CertDir)
	if !have.equal(want) {
		if wait := r.switchWait(have, desired, ca, now); wait > 0 {
			r.log.V(1).Info("waiting for the new CA to reach every API server before serving a certificate it signed", "wait", wait.String())
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		if err := writeKeyPair(r.opts.CertDir, want); err != nil {
			return reconcile.Result{}, err
		}
		leaf, _ := want.leaf()
		r.log.Info("serving certificate updated", "dir", r.opts.CertDir, "notBefore", leaf.NotBefore, "notAfter", leaf.NotAfter, "ca", describe(caSet{ca}))
	}
	r.syncedOnce.Do(func() { close(r.synced) })
	return reconcile.Result{RequeueAfter: r.recheckAfter(desired, now)}, nil
}

// webhookConfigs returns the webhook configurations that exist. One that
// does not exist yet constrains nothing: the API server calls no webhook
// through it, and its creation is an event that brings us back here.
func (r *trustReconciler) webhookConfigs(ctx context.Context) ([]webhookConfig, error) {
	var out []webhookConfig
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	switch err := r.reader.Get(ctx, client.ObjectKey{Name: r.opts.ValidatingWebhookConfiguration}, v); {
	case err == nil:
		out = append(out, validatingConfig{v})
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", r.opts.ValidatingWebhookConfiguration, err)
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	switch err := r.reader.Get(ctx, client.ObjectKey{Name: r.opts.MutatingWebhookConfiguration}, m); {
	case err == nil:
		out = append(out, mutatingConfig{m})
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", r.opts.MutatingWebhookConfiguration, err)
	}
	return out, nil
}

// switchWait is how long this replica must still wait before serving a
// certificate signed by ca. A replica whose current certificate no API
// server trusts (the bootstrap certificate, or none) switches at once: it
// has nothing to lose. A replica serving a trusted certificate waits until
// ca has been in the bundle for PropagationDelay, because each API server
// sees the updated webhook configuration through its own watch.
func (r *trustReconciler) switchWait(have keyPair, bundle caSet, ca *x509.Certificate, now time.Time) time.Duration {
	leaf, err := have.leaf()
	if err != nil {
		return 0
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: bundle.pool(), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return 0
	}
	return r.firstSeen[fingerprint(ca)].Add(r.opts.PropagationDelay).Sub(now)
}

// markSeen notes when each CA of the bundle was first in every webhook
// configuration, and forgets CAs that left it.
func (r *trustReconciler) markSeen(bundle caSet, now time.Time) {
	keep := map[[32]byte]time.Time{}
	for _, c := range bundle {
		fp := fingerprint(c)
		if t, ok := r.firstSeen[fp]; ok {
			keep[fp] = t
		} else {
			keep[fp] = now
		}
	}
	r.firstSeen = keep
}

// recheckAfter is when to look again without an event: at the next expiry
// check, or just after a CA in the bundle expires so that it is pruned.
func (r *trustReconciler) recheckAfter(bundle caSet, now time.Time) time.Duration {
	after := r.opts.CheckInterval
	if d := bundle.nextExpiry().Sub(now) + time.Second; d > 0 && d < after {
		after = d
	}
	return after
}

// dnsName is the name the rotator verifies the serving certificate for.
func (r *trustReconciler) dnsName() string {
	name, _ := r.opts.rotatorDNSNames()
	return name
}

func allSame(bundles [][]byte, desired caSet) bool {
	for _, b := range bundles {
		if !desired.sameAs(b) {
			return false
		}
	}
	return true
}

// describe lists a bundle's CAs for the log: fingerprint prefix and
// validity (the rotator gives every CA the same subject and serial).
func describe(s caSet) []string {
	var out []string
	for _, c := range s {
		fp := fingerprint(c)
		out = append(out, fmt.Sprintf("%s sha256:%x valid %s to %s", c.Subject.CommonName, fp[:8],
			c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339)))
	}
	return out
}
