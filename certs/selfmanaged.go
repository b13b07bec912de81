package certs

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Controller names, unique within a process.
const (
	rotatorControllerName = "steward-cert-rotator"
	trustControllerName   = "steward-cert-trust"
)

// SetupSelfManaged adds self-managed certificates to mgr, before mgr starts:
//
//   - cert-controller's rotator creates the CA and serving certificate in
//     the Secret and replaces them RenewBefore their expiry;
//   - Steward's trust reconciler injects the CA bundle into both webhook
//     configurations and writes the serving certificate into CertDir, where
//     the webhook server's certwatcher picks it up without a restart.
//
// Both run on every replica without leader election: writes to the Secret
// and the webhook configurations carry resourceVersions, so concurrent
// replicas cannot overwrite each other; the loser of a race re-reads and
// finds the work done. Every replica must write its own CertDir anyway.
//
// CertDir receives a throwaway certificate at once if it holds none, because
// the webhook server does not start without one. The returned channel closes
// when this replica serves the Secret's certificate and the webhook
// configurations trust its CA: gate readiness on it (see ReadyCheck).
//
// mgr's scheme must include core/v1 and admissionregistration/v1 (client-go's
// scheme does). All reads go through caches restricted to the one Secret and
// the two webhook configurations by name, so the permissions in RBAC suffice
// and mgr's own cache needs no options.
func SetupSelfManaged(mgr manager.Manager, opts SelfManagedOptions) (ready <-chan struct{}, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	log := mgr.GetLogger().WithName("certs")
	wrote, err := ensureBootstrapKeyPair(opts.CertDir, time.Now())
	if err != nil {
		return nil, fmt.Errorf("--%s %s: writing a bootstrap certificate: %w", FlagCertDir, opts.CertDir, err)
	}
	if wrote {
		log.Info("wrote an untrusted bootstrap certificate; unready until the Secret's certificate replaces it", "dir", opts.CertDir)
	}

	dnsName, extraDNSNames := opts.rotatorDNSNames()
	rot := &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: opts.Namespace, Name: opts.SecretName},
		CertDir:        opts.CertDir,
		CAName:         CACertificateName,
		CAOrganization: "steward",
		DNSName:        dnsName,
		ExtraDNSNames:  extraDNSNames,
		IsReady:        make(chan struct{}),
		// No Webhooks: cert-controller would inject only the current CA,
		// and rewrite the bundle whenever it differs. The trust reconciler
		// injects a bundle that also trusts the previous CA.
		Webhooks:               nil,
		FieldOwner:             fieldOwner,
		RestartOnSecretRefresh: false,
		ExtKeyUsages:           &[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		RequireLeaderElection:  false,
		CaCertDuration:         opts.CAValidity,
		ServerCertDuration:     opts.CertValidity,
		RotationCheckFrequency: opts.CheckInterval,
		LookaheadInterval:      opts.RenewBefore,
		ControllerName:         rotatorControllerName,
	}
	if err := rotator.AddRotator(newNameScopedManager(mgr, opts.Namespace, opts.SecretName), rot); err != nil {
		return nil, fmt.Errorf("adding the certificate rotator: %w", err)
	}

	c, err := newScopedCache(mgr, opts)
	if err != nil {
		return nil, err
	}
	r := newTrustReconciler(c, mgr.GetClient(), opts, log)
	ctrl, err := controller.New(trustControllerName, mgr, controller.Options{
		Reconciler:              r,
		MaxConcurrentReconciles: 1,
		NeedLeaderElection:      ptr.To(false),
	})
	if err != nil {
		return nil, fmt.Errorf("adding the certificate trust controller: %w", err)
	}
	always := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: rot.SecretKey}}
	})
	for _, obj := range []client.Object{
		&corev1.Secret{},
		&admissionregistrationv1.ValidatingWebhookConfiguration{},
		&admissionregistrationv1.MutatingWebhookConfiguration{},
	} {
		if err := ctrl.Watch(source.Kind(c, obj, always)); err != nil {
			return nil, fmt.Errorf("watching %T: %w", obj, err)
		}
	}

	done := make(chan struct{})
	go func() {
		<-rot.IsReady
		<-r.synced
		log.Info("serving the self-managed certificate; the webhook configurations trust its CA")
		close(done)
	}()
	return done, nil
}

// ReadyCheck is a readiness check that passes once ready is closed.
func ReadyCheck(ready <-chan struct{}) healthz.Checker {
	return func(*http.Request) error {
		select {
		case <-ready:
			return nil
		default:
			return errors.New("the self-managed serving certificate is not in place yet")
		}
	}
}

// newScopedCache returns an informer cache that holds only the Secret and
// the two webhook configurations, each selected by name, and refuses reads
// of anything else. It is started with mgr's caches.
func newScopedCache(mgr manager.Manager, opts SelfManagedOptions) (cache.Cache, error) {
	byName := func(name string) fields.Selector { return fields.OneTermEqualSelector("metadata.name", name) }
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {
				Namespaces: map[string]cache.Config{opts.Namespace: {}},
				Field:      byName(opts.SecretName),
			},
			&admissionregistrationv1.ValidatingWebhookConfiguration{}: {Field: byName(opts.ValidatingWebhookConfiguration)},
			&admissionregistrationv1.MutatingWebhookConfiguration{}:   {Field: byName(opts.MutatingWebhookConfiguration)},
		},
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the certificate cache: %w", err)
	}
	if err := mgr.Add(cacheRunnable{c}); err != nil {
		return nil, fmt.Errorf("adding the certificate cache: %w", err)
	}
	return c, nil
}

// cacheRunnable makes the manager treat the cache like its own: started
// first, on every replica, and waited for before controllers start.
type cacheRunnable struct{ cache.Cache }

func (c cacheRunnable) GetCache() cache.Cache { return c.Cache }
