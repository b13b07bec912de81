package certs

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// trustFixture is a trust reconciler over a fake API server and a
// temporary CertDir, with a clock the test moves.
type trustFixture struct {
	t     *testing.T
	c     client.Client
	r     *trustReconciler
	clock time.Time
}

func newTrustFixture(t *testing.T, now time.Time, objs ...client.Object) *trustFixture {
	t.Helper()
	opts := DefaultSelfManagedOptions()
	opts.CertDir = filepath.Join(t.TempDir(), "certs")
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
	f := &trustFixture{t: t, c: c, clock: now}
	f.r = newTrustReconciler(c, c, opts, logr.Discard())
	f.r.now = func() time.Time { return f.clock }
	return f
}

func (f *trustFixture) reconcile() reconcile.Result {
	f.t.Helper()
	res, err := f.r.Reconcile(context.Background(), reconcile.Request{})
	if err != nil {
		f.t.Fatalf("Reconcile: %v", err)
	}
	return res
}

// bundles returns every webhook's caBundle, validating first.
func (f *trustFixture) bundles() [][]byte {
	f.t.Helper()
	var out [][]byte
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: "steward"}, v); err == nil {
		out = append(out, validatingConfig{v}.bundles()...)
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: "steward"}, m); err == nil {
		out = append(out, mutatingConfig{m}.bundles()...)
	}
	return out
}

func (f *trustFixture) serving() keyPair {
	p, _ := readKeyPair(f.r.opts.CertDir)
	return p
}

func (f *trustFixture) synced() bool {
	select {
	case <-f.r.synced:
		return true
	default:
		return false
	}
}

func (f *trustFixture) setSecret(ca testCA, leaf keyPair) {
	f.t.Helper()
	s := &corev1.Secret{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "steward-system", Name: "steward-serving-cert"}, s); err != nil {
		f.t.Fatal(err)
	}
	s.Data = secretData(ca, leaf)
	if err := f.c.Update(context.Background(), s); err != nil {
		f.t.Fatal(err)
	}
}

func secretData(ca testCA, leaf keyPair) map[string][]byte {
	return map[string][]byte{"ca.crt": ca.CertPEM, "ca.key": ca.KeyPEM, "tls.crt": leaf.cert, "tls.key": leaf.key}
}

func secret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "steward-system", Name: "steward-serving-cert"}, Data: data}
}

func webhookConfigs(bundle []byte) []client.Object {
	cc := func() admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{CABundle: bundle}
	}
	return []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "steward"},
			Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "a.steward.dev", ClientConfig: cc()}, {Name: "b.steward.dev", ClientConfig: cc()}},
		},
		&admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "steward"},
			Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "c.steward.dev", ClientConfig: cc()}},
		},
	}
}

func TestTrustFirstStartInjectsCAAndServesAtOnce(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(365*24*time.Hour))
	leaf := ca.leaf(t, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	f := newTrustFixture(t, now, append(webhookConfigs(nil), secret(secretData(ca, leaf)))...)
	if _, err := ensureBootstrapKeyPair(f.r.opts.CertDir, now); err != nil {
		t.Fatal(err)
	}

	f.reconcile()

	bundles := f.bundles()
	if len(bundles) != 3 {
		t.Fatalf("want the bundle in all 3 webhooks of both configurations, got %d", len(bundles))
	}
	for i, b := range bundles {
		if !(caSet{ca.Cert}).sameAs(b) {
			t.Errorf("webhook %d caBundle does not hold exactly the Secret's CA", i)
		}
	}
	if !f.serving().equal(leaf) {
		t.Error("the untrusted bootstrap certificate was not replaced at once by the Secret's certificate")
	}
	if !f.synced() {
		t.Error("not reported synced although the CA is injected and the certificate served")
	}
}

func TestTrustCARotationKeepsBothTrustedAndSwitchesAfterPropagation(t *testing.T) {
	now := time.Now()
	oldCA := newTestCA(t, now.Add(-300*24*time.Hour), now.Add(20*24*time.Hour))
	oldLeaf := oldCA.leaf(t, now.Add(-60*24*time.Hour), now.Add(30*24*time.Hour))
	f := newTrustFixture(t, now, append(webhookConfigs(oldCA.CertPEM), secret(secretData(oldCA, oldLeaf)))...)
	if err := writeKeyPair(f.r.opts.CertDir, oldLeaf); err != nil {
		t.Fatal(err)
	}
	f.reconcile()
	if !f.serving().equal(oldLeaf) {
		t.Fatal("steady state: the Secret's certificate should be served")
	}

	// The rotator replaces the CA and the serving certificate together.
	newCA := newTestCA(t, now.Add(-time.Hour), now.Add(365*24*time.Hour))
	newLeaf := newCA.leaf(t, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	f.setSecret(newCA, newLeaf)
	res := f.reconcile()

	for i, b := range f.bundles() {
		if !(caSet{newCA.Cert, oldCA.Cert}).sameAs(b) {
			t.Errorf("webhook %d: during rotation the bundle must hold the new and the old CA", i)
		}
	}
	if !f.serving().equal(oldLeaf) {
		t.Error("switched to the new certificate before the API servers could have seen the new CA")
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > f.r.opts.PropagationDelay {
		t.Errorf("RequeueAfter = %s, want a recheck within the propagation delay %s", res.RequeueAfter, f.r.opts.PropagationDelay)
	}

	f.clock = f.clock.Add(f.r.opts.PropagationDelay)
	f.reconcile()
	if !f.serving().equal(newLeaf) {
		t.Error("the new certificate is not served after the propagation delay")
	}
	for i, b := range f.bundles() {
		if !(caSet{newCA.Cert, oldCA.Cert}).sameAs(b) {
			t.Errorf("webhook %d: the old CA left the bundle before it expired", i)
		}
	}

	// Once the old CA expires, it is pruned.
	f.clock = oldCA.Cert.NotAfter.Add(time.Second)
	f.reconcile()
	for i, b := range f.bundles() {
		if !(caSet{newCA.Cert}).sameAs(b) {
			t.Errorf("webhook %d: the expired CA was not pruned", i)
		}
	}
}

func TestTrustServingRenewalWithSameCASwitchesAtOnce(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now.Add(-100*24*time.Hour), now.Add(265*24*time.Hour))
	oldLeaf := ca.leaf(t, now.Add(-80*24*time.Hour), now.Add(10*24*time.Hour))
	f := newTrustFixture(t, now, append(webhookConfigs(ca.CertPEM), secret(secretData(ca, oldLeaf)))...)
	if err := writeKeyPair(f.r.opts.CertDir, oldLeaf); err != nil {
		t.Fatal(err)
	}
	f.reconcile()

	f.clock = f.clock.Add(time.Hour)
	newLeaf := ca.leaf(t, f.clock.Add(-time.Hour), f.clock.Add(90*24*time.Hour))
	f.setSecret(ca, newLeaf)
	f.reconcile()
	if !f.serving().equal(newLeaf) {
		t.Error("a renewed certificate from a CA every API server has trusted for long should be served at once")
	}
}

func TestTrustDoesNotRewriteBundleInOtherOrder(t *testing.T) {
	now := time.Now()
	oldCA := newTestCA(t, now.Add(-300*24*time.Hour), now.Add(20*24*time.Hour))
	newCA := newTestCA(t, now.Add(-time.Hour), now.Add(365*24*time.Hour))
	leaf := newCA.leaf(t, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	// Another replica wrote the bundle old-first.
	f := newTrustFixture(t, now, append(webhookConfigs(caSet{oldCA.Cert, newCA.Cert}.pem()), secret(secretData(newCA, leaf)))...)
	before := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	_ = f.c.Get(context.Background(), client.ObjectKey{Name: "steward"}, before)

	f.reconcile()

	after := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	_ = f.c.Get(context.Background(), client.ObjectKey{Name: "steward"}, after)
	if before.ResourceVersion != after.ResourceVersion {
		t.Error("rewrote a bundle that differs only in order: replicas would fight")
	}
}

func TestTrustWaits(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(365*24*time.Hour))
	other := newTestCA(t, now.Add(-time.Hour), now.Add(365*24*time.Hour))
	leaf := ca.leaf(t, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	tests := map[string]struct {
		reason string
		objs   []client.Object
	}{
		"NoSecret": {
			reason: "Without the Secret there is nothing to inject or serve.",
			objs:   webhookConfigs(nil),
		},
		"EmptySecret": {
			reason: "The shipped Secret is empty until the rotator fills it.",
			objs:   append(webhookConfigs(nil), secret(nil)),
		},
		"MismatchedServingCertificate": {
			reason: "A serving certificate not signed by the Secret's CA is never served; the rotator replaces it.",
			objs: append(webhookConfigs(nil), secret(map[string][]byte{
				"ca.crt": other.CertPEM, "ca.key": other.KeyPEM, "tls.crt": leaf.cert, "tls.key": leaf.key,
			})),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newTrustFixture(t, now, tc.objs...)
			f.reconcile()
			if _, err := os.Stat(filepath.Join(f.r.opts.CertDir, "tls.crt")); err == nil {
				t.Errorf("%s\nwrote a serving certificate", tc.reason)
			}
			if f.synced() {
				t.Errorf("%s\nreported synced", tc.reason)
			}
		})
	}
}

func TestTrustWithoutWebhookConfigurationsStillServes(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(365*24*time.Hour))
	leaf := ca.leaf(t, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	f := newTrustFixture(t, now, secret(secretData(ca, leaf)))
	f.reconcile()
	if !f.serving().equal(leaf) || !f.synced() {
		t.Error("webhook configurations that do not exist yet constrain nothing; the certificate should be served")
	}
}
