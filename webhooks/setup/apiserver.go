package setup

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
)

// apiServerAttempt bounds one request for the API server's version.
const apiServerAttempt = 5 * time.Second

// InCluster says whether the API server is the one of the cluster Steward
// runs in: no --kubeconfig and no $KUBECONFIG, in a pod (RESTConfig then
// takes the in-cluster configuration).
func InCluster(kubeconfig string) bool {
	return kubeconfig == "" && os.Getenv("KUBECONFIG") == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != ""
}

// ReachAPIServer asks the API server at cfg for its version, so that a
// kubeconfig naming a server that is not there, or credentials it refuses,
// is one clear error at start instead of caches that never sync. A server
// that cannot be connected to is tried again until wait has passed;
// refused credentials and a certificate that does not verify are final at
// once. Any other answer, even an error status, means the server is there.
func ReachAPIServer(ctx context.Context, cfg *rest.Config, wait time.Duration) error {
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("the API server at %s: %w", cfg.Host, err)
	}
	deadline := time.Now().Add(wait)
	delay := 250 * time.Millisecond
	for {
		attempt, cancel := context.WithTimeout(ctx, apiServerAttempt)
		err := discoveryClient.RESTClient().Get().AbsPath("/version").Do(attempt).Error()
		cancel()
		var status apierrors.APIStatus
		var verify *tls.CertificateVerificationError
		switch {
		case err == nil:
			return nil
		case apierrors.IsUnauthorized(err):
			return fmt.Errorf("the API server at %s refused the credentials (401 Unauthorized): check the kubeconfig's user", cfg.Host)
		case errors.As(err, &verify):
			return fmt.Errorf("the API server at %s: %w", cfg.Host, verify)
		case errors.As(err, &status):
			return nil // it answered
		}
		if time.Now().Add(delay).After(deadline) {
			if wait > 0 {
				return fmt.Errorf("cannot reach the API server at %s (tried for %s): %w", cfg.Host, wait, err)
			}
			return fmt.Errorf("cannot reach the API server at %s: %w", cfg.Host, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// RESTConfig finds the API server. Steward asks it not to gzip responses:
// informers receive watch events one at a time, and the API server starts a
// new gzip stream for each event, so every event of every watch would cost
// the API server a compression (about 10 µs) and Steward a decompression
// (about 20 µs, a third of the CPU its informers spend on an event), to
// save a few hundred bytes on the cluster network. (Client-go honours the
// setting over TLS only, which every API server in a cluster speaks; for a
// plain-HTTP address it uses Go's default transport, which asks for gzip.)
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		if cfg, err = ctrl.GetConfig(); err != nil {
			return nil, fmt.Errorf("finding the API server (in-cluster or $KUBECONFIG): %w", err)
		}
	} else if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.DisableCompression = true
	return cfg, nil
}
