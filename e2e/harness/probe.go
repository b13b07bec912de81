package harness

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Names of the probe that proves webhook configurations have reached the
// API server's admission plugins.
const (
	probeConfigName = "steward-e2e-probe"
	probeLabel      = "e2e.steward.dev/probe"
)

// probeServer is a webhook server inside the harness process that allows
// everything and records the paths it was called at.
type probeServer struct {
	srv  *http.Server
	port int
	ca   []byte
	mu   sync.Mutex
	seen map[string]bool
}

func startProbeServer() (*probeServer, error) {
	sc, err := NewServingCert()
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(sc.Cert, sc.Key)
	if err != nil {
		return nil, fmt.Errorf("loading the probe certificate: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the webhook probe: %w", err)
	}
	p := &probeServer{port: l.Addr().(*net.TCPAddr).Port, ca: sc.CA, seen: map[string]bool{}}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serve),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() { _ = p.srv.Serve(tls.NewListener(l, p.srv.TLSConfig)) }()
	return p, nil
}

// serve allows the request and remembers the path.
func (p *probeServer) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.seen[r.URL.Path] = true
	p.mu.Unlock()
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

func (p *probeServer) called(path string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[path]
}

func (p *probeServer) close() { _ = p.srv.Close() }

// WaitWebhooksEffective returns once the API server's admission plugins use
// every webhook configuration written before it was called. It writes a
// validating and a mutating probe configuration with a fresh selector and
// path, then dry-runs a matching ConfigMap until both probes have been
// called. The plugins read each kind of configuration through one watch, in
// the order of writes, so a plugin that calls the probe has also seen the
// writes before it. The probe configurations are deleted afterwards.
func (e *Env) WaitWebhooksEffective(ctx context.Context, timeout time.Duration) error {
	nonce := make([]byte, 6)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	id := hex.EncodeToString(nonce)
	validatePath, mutatePath := "/validate/"+id, "/mutate/"+id
	url := func(path string) *string {
		u := fmt.Sprintf("https://127.0.0.1:%d%s", e.probe.port, path)
		return &u
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{probeLabel: id}}
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	timeoutSeconds := int32(5)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: probeConfigName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "probe.e2e.steward.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: url(validatePath), CABundle: e.probe.ca},
			Rules:                   rules,
			ObjectSelector:          selector,
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			TimeoutSeconds:          &timeoutSeconds,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: probeConfigName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "probe.e2e.steward.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: url(mutatePath), CABundle: e.probe.ca},
			Rules:                   rules,
			ObjectSelector:          selector,
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			TimeoutSeconds:          &timeoutSeconds,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	for _, obj := range []client.Object{vwc, mwc} {
		if err := applyTyped(ctx, e.Client, obj); err != nil {
			return fmt.Errorf("writing the webhook probe: %w", err)
		}
	}
	defer func() {
		for _, obj := range []client.Object{vwc, mwc} {
			_ = e.Client.Delete(context.WithoutCancel(ctx), obj)
		}
	}()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:      "steward-e2e-probe-" + id,
			Namespace: metav1.NamespaceDefault,
			Labels:    map[string]string{probeLabel: id},
		}}
		lastErr = e.Client.Create(ctx, cm, client.DryRunAll)
		if e.probe.called(mutatePath) && e.probe.called(validatePath) {
			return nil
		}
		select {
		case <-ctx.Done():
			err := errors.New("the API server did not call the probe webhooks")
			if lastErr != nil {
				err = fmt.Errorf("%w (last probe request: %v)", err, lastErr)
			}
			return fmt.Errorf("waiting for the webhook configurations to take effect: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
