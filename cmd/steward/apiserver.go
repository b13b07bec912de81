package main

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
)

// apiServerWait is how long serve (outside the cluster) and audit keep
// trying an API server they cannot connect to before giving up with
// exitCluster; tests shorten it.
var apiServerWait = 10 * time.Second

// apiServerAttempt bounds one request for the API server's version.
const apiServerAttempt = 5 * time.Second

// inCluster says whether the API server is the one of the cluster Steward
// runs in: no --kubeconfig and no $KUBECONFIG, in a pod (restConfig then
// takes the in-cluster configuration).
func inCluster(kubeconfig string) bool {
	return kubeconfig == "" && os.Getenv("KUBECONFIG") == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != ""
}

// reachAPIServer asks the API server at cfg for its version, so that a
// kubeconfig naming a server that is not there, or credentials it refuses,
// is one clear error at start instead of caches that never sync. A server
// that cannot be connected to is tried again until wait has passed;
// refused credentials and a certificate that does not verify are final at
// once. Any other answer, even an error status, means the server is there.
func reachAPIServer(ctx context.Context, cfg *rest.Config, wait time.Duration) error {
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
