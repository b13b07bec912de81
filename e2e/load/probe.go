package main

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
)

// probeServer answers probe webhooks: it allows everything and remembers
// which paths the API server called. Written after a change of webhook
// configurations, a probe configuration is called only once the API
// server's admission plugin has seen every earlier write of its kind (one
// watch delivers them in order), so the change is in effect.
type probeServer struct {
	srv  *http.Server
	port int
	ca   []byte
	mu   sync.Mutex
	seen map[string]bool
}

const probeLabel = "bench.steward.dev/probe"

func startProbeServer() (*probeServer, error) {
	sc, err := newServingCert()
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(sc.Cert, sc.Key)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
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

// webhookBarrier returns once the API server's webhook admission plugins
// use every webhook configuration written before it was called.
func (c *cluster) webhookBarrier(ctx context.Context, p *probeServer) error {
	nonce := make([]byte, 6)
	_, _ = rand.Read(nonce)
	id := hex.EncodeToString(nonce)
	name := "bench-probe-" + id
	vpath, mpath := "/validate/"+id, "/mutate/"+id
	url := func(path string) *string {
		u := fmt.Sprintf("https://127.0.0.1:%d%s", p.port, path)
		return &u
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{probeLabel: id}}
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(5)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "probe.bench.steward.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url(vpath), CABundle: p.ca},
			Rules: rules, ObjectSelector: selector, FailurePolicy: &ignore, SideEffects: &none, TimeoutSeconds: &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "probe.bench.steward.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url(mpath), CABundle: p.ca},
			Rules: rules, ObjectSelector: selector, FailurePolicy: &ignore, SideEffects: &none, TimeoutSeconds: &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	ar := c.kube.AdmissionregistrationV1()
	if _, err := ar.ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("writing the probe: %w", err)
	}
	defer func() {
		_ = ar.ValidatingWebhookConfigurations().Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
	}()
	if _, err := ar.MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("writing the probe: %w", err)
	}
	defer func() {
		_ = ar.MutatingWebhookConfigurations().Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
	}()

	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, Labels: map[string]string{probeLabel: id}}}
		_, _ = c.kube.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if p.called(vpath) && p.called(mpath) {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("the API server did not call the probe webhooks within 60s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
