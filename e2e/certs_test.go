package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/stewardhq/steward/certs"
	"github.com/stewardhq/steward/e2e/harness"
)

// anonymous is the identity the least-privilege test runs self-managed
// certificates as. Every authenticated user is a cluster-admin in this
// environment (so that only Steward refuses requests), and impersonating
// system:anonymous is the one way to get an identity RBAC has granted
// nothing: it is not in system:authenticated.
const anonymous = "system:anonymous"

// TestSelfManagedCertsNeedOnlyTheirRBAC runs self-managed certificates as an
// identity holding exactly certs.SelfManagedOptions.RBAC() (plus the API
// discovery every service account has), against webhook configurations the
// API server never calls. It proves that the published rules suffice for
// filling the Secret, injecting the CA and writing the serving certificate,
// that they grant nothing wider (the namespace's other Secrets are refused),
// and that a forced CA rotation (the Secret emptied) keeps the certificate
// in CertDir trusted by the bundle at every moment.
func TestSelfManagedCertsNeedOnlyTheirRBAC(t *testing.T) {
	quietControllerRuntime()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := env.Client

	opts := certs.DefaultSelfManagedOptions()
	opts.Namespace = "steward-certs-rbac"
	opts.SecretName = "probe-serving-cert"
	opts.ValidatingWebhookConfiguration = "steward-certs-rbac-probe"
	opts.MutatingWebhookConfiguration = "steward-certs-rbac-probe"
	opts.CertDir = filepath.Join(t.TempDir(), "serving-certs")
	opts.ExtraDNSNames = []string{"localhost"}
	opts.PropagationDelay = 2 * time.Second

	clusterRules, namespacedRules := opts.RBAC()
	discovery := rbacv1.PolicyRule{NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*"}, Verbs: []string{"get"}}
	subject := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: anonymous}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opts.Namespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: opts.Namespace, Name: opts.SecretName}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: opts.Namespace, Name: "someone-elses"}, StringData: map[string]string{"password": "hunter2"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "steward-certs-rbac-probe"}, Rules: append(clusterRules, discovery)},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "steward-certs-rbac-probe"}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "steward-certs-rbac-probe"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: opts.Namespace, Name: "steward-certs"}, Rules: namespacedRules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: opts.Namespace, Name: "steward-certs"}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "steward-certs"}},
	}
	objs = append(objs, unreachableWebhookConfigs(opts.ValidatingWebhookConfiguration)...)
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	t.Cleanup(func() {
		for _, o := range objs {
			_ = admin.Delete(context.Background(), o)
		}
	})

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: anonymous}
	restricted, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// The rules are narrow: without the name selector, listing the
	// namespace's Secrets is refused, and so is reading another Secret.
	if err := restricted.List(ctx, &corev1.SecretList{}, client.InNamespace(opts.Namespace)); !apierrors.IsForbidden(err) {
		t.Errorf("listing every Secret of %s: got %v, want Forbidden", opts.Namespace, err)
	}
	if err := restricted.Get(ctx, client.ObjectKey{Namespace: opts.Namespace, Name: "someone-elses"}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading another Secret: got %v, want Forbidden", err)
	}

	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 clientgoscheme.Scheme,
		Logger:                 testr.NewWithOptions(t, testr.Options{Verbosity: 1}),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	ready, err := certs.SetupSelfManaged(mgr, opts)
	if err != nil {
		t.Fatal(err)
	}
	mgrCtx, stop := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	// The manager logs through t: it must be stopped before the test ends.
	defer func() {
		stop()
		if err := <-mgrDone; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	select {
	case <-ready:
	case err := <-mgrDone:
		t.Fatalf("manager stopped before the certificate was ready: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("self-managed certificate not ready within 60s as an identity holding only its RBAC rules")
	}
	firstCA := probeState(t, ctx, opts)
	if firstCA == nil {
		t.Fatal("no consistent state after ready")
	}

	// Force a rotation the way an operator would: empty the Secret.
	secret := &corev1.Secret{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: opts.Namespace, Name: opts.SecretName}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data = nil
	if err := admin.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ca := probeState(t, ctx, opts)
		if ca != nil && !ca.Equal(firstCA) {
			bundle := webhookBundle(t, ctx, opts.ValidatingWebhookConfiguration)
			if !containsCert(bundle, firstCA) {
				t.Error("the previous CA left the bundle right after the rotation; replicas still serving its certificate would fail")
			}
			break
		}
		if time.Now().After(deadline) || t.Failed() {
			t.Fatal("the serving certificate did not move to a new CA within 60s of emptying the Secret")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// probeState checks that the certificate in CertDir verifies for localhost
// against the caBundle of every webhook of both configurations, and returns
// the CA it chains to (nil if CertDir is being rewritten).
func probeState(t *testing.T, ctx context.Context, opts certs.SelfManagedOptions) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(opts.CertDir, "tls.crt"), filepath.Join(opts.CertDir, "tls.key"))
	if err != nil {
		return nil // between the two renames
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatalf("parsing the served certificate: %v", err)
	}
	var chainCA *x509.Certificate
	for _, bundle := range allBundles(t, ctx, opts.ValidatingWebhookConfiguration) {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(bundle) {
			t.Errorf("a webhook has no usable caBundle: %q", bundle)
			return nil
		}
		chains, err := leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: pool})
		if err != nil {
			t.Errorf("the certificate Steward serves is not trusted by a webhook's caBundle: %v", err)
			return nil
		}
		chainCA = chains[0][len(chains[0])-1]
	}
	return chainCA
}

func allBundles(t *testing.T, ctx context.Context, name string) [][]byte {
	t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, vwc); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, mwc); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, w := range vwc.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	for _, w := range mwc.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

func webhookBundle(t *testing.T, ctx context.Context, name string) []byte {
	t.Helper()
	return allBundles(t, ctx, name)[0]
}

func containsCert(bundle []byte, c *x509.Certificate) bool {
	for len(bundle) > 0 {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			return false
		}
		if bytes.Equal(block.Bytes, c.Raw) {
			return true
		}
	}
	return false
}

// unreachableWebhookConfigs are configurations with one webhook each that
// match a resource that does not exist, so the API server never calls them.
func unreachableWebhookConfigs(name string) []client.Object {
	url := "https://localhost:1/never"
	none := admissionregistrationv1.SideEffectClassNone
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"certs-probe.steward.dev"}, APIVersions: []string{"v1"}, Resources: []string{"nothing"}},
	}}
	cc := admissionregistrationv1.WebhookClientConfig{URL: &url}
	return []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{
				{Name: "a.certs-probe.steward.dev", ClientConfig: cc, Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
				{Name: "b.certs-probe.steward.dev", ClientConfig: cc, Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
			},
		},
		&admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionregistrationv1.MutatingWebhook{
				{Name: "c.certs-probe.steward.dev", ClientConfig: cc, Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
			},
		},
	}
}

// Short lifetimes for the rotation test: a CA lives 45s and is replaced 20s
// before it expires, so a rotation happens every 25s and the previous CA
// stays valid (and in the bundle) for 20s after it, of which Steward waits 2s
// before serving the new certificate. The margin absorbs the seconds that
// three replicas generating RSA keys at once take on a busy machine.
var selfManagedArgs = []string{
	"--cert-mode=self-managed",
	"--cert-ca-validity=45s",
	"--cert-validity=45s",
	"--cert-renew-before=20s",
	"--cert-check-interval=1s",
	"--cert-propagation-delay=2s",
}

// TestSelfManagedCertificates runs three steward replicas in self-managed
// mode behind a round-robin proxy, the way a Deployment runs behind its
// Service: they fill their Secret, inject their CA into both webhook
// configurations, and the API server's calls through both succeed. Then,
// while clients keep writing through the validating and the mutating
// webhook, the CA rotates on its own twice or more and once by force (the
// Secret emptied), and not one admission call fails; at the end every
// replica serves the Secret's certificate.
func TestSelfManagedCertificates(t *testing.T) {
	quietControllerRuntime()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	admin := env.Client

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: harness.StewardNamespace, Name: certs.DefaultSecretName}}
	if err := admin.Create(ctx, secret); err != nil {
		t.Fatalf("creating the empty Secret the manifests ship: %v", err)
	}
	// Runs last: the extra replicas (registered below) stop first, so none
	// injects its CA after the default Steward is back.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := env.RestartSteward(ctx, harness.DefaultConfig); err != nil {
			t.Errorf("restoring the default Steward: %v", err)
		}
		_ = admin.Delete(ctx, secret)
	})
	first, err := env.RestartSteward(ctx, harness.DefaultConfig, selfManagedArgs...)
	if err != nil {
		t.Fatalf("starting Steward with self-managed certificates: %v", err)
	}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ca.crt", "ca.key", "tls.crt", "tls.key"} {
		if len(secret.Data[k]) == 0 {
			t.Errorf("Steward did not fill %s in Secret %s", k, secret.Name)
		}
	}

	second := startStewardProc(t, ctx, procOptions{sharedCerts: true})
	third := startStewardProc(t, ctx, procOptions{sharedCerts: true})
	proxy := startTCPProxy(t, first.Port(), second.port, third.port)
	repointWebhooks(t, ctx, first.Port(), proxy.port())

	calls := newAdmissionCalls(t, ctx)
	t.Run("APIServerCallsBothWebhooksThroughTheInjectedCA", func(t *testing.T) {
		// The API server picks up the new URLs through its informer.
		harness.Eventually(t, harness.PropagationTimeout, func() error {
			if err := calls.validating(0); err != nil {
				return err
			}
			if c := proxy.connections(); c[0]+c[1]+c[2] == 0 {
				return errors.New("the API server has not called through the proxy yet")
			}
			return nil
		})
		if err := calls.mutating(0); err != nil {
			t.Error(err)
		}
	})

	t.Run("CARotationsUnderLoadFailNoAdmissionCall", func(t *testing.T) {
		const duration, writers = 40 * time.Second, 4
		var (
			mu       sync.Mutex
			failures []string
			total    int
		)
		clients := make([]*admissionCalls, writers)
		for w := range clients {
			clients[w] = newAdmissionCalls(t, ctx)
		}
		start := time.Now()
		var wg sync.WaitGroup
		for w, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w * 1_000_000; time.Since(start) < duration; i++ {
					for _, call := range []func(int) error{c.validating, c.mutating} {
						err := call(i)
						mu.Lock()
						total++
						if err != nil {
							failures = append(failures, fmt.Sprintf("%s: %v", time.Since(start).Round(time.Millisecond), err))
						}
						mu.Unlock()
					}
				}
			}()
		}
		seenCAs := map[[32]byte]bool{}
		forced := false
		for time.Since(start) < duration {
			for _, c := range bundleCAs(t, ctx) {
				seenCAs[sha256Of(c.Raw)] = true
			}
			if !forced && time.Since(start) > 5*time.Second {
				forced = true
				s := &corev1.Secret{}
				if err := admin.Get(ctx, client.ObjectKeyFromObject(secret), s); err != nil {
					t.Fatal(err)
				}
				s.Data = nil
				if err := admin.Update(ctx, s); err != nil {
					t.Fatalf("emptying the Secret to force a rotation: %v", err)
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		wg.Wait()
		t.Logf("%d admission calls over %s by %d writers; %d CAs seen in the bundle; connections per replica %v",
			total, duration, writers, len(seenCAs), proxy.connections())
		if len(failures) > 0 {
			t.Errorf("%d of %d admission calls did not get Steward's answer during rotation; first ones:\n%s",
				len(failures), total, strings.Join(failures[:min(len(failures), 10)], "\n"))
		}
		if len(seenCAs) < 3 {
			t.Errorf("only %d CAs were seen in the bundle: the test did not rotate the CA twice (once forced, once on expiry)", len(seenCAs))
		}
		for i, n := range proxy.connections() {
			if n == 0 {
				t.Errorf("replica %d was never called: the test did not exercise all replicas", i)
			}
		}
	})

	t.Run("EveryReplicaServesTheSecretsCertificate", func(t *testing.T) {
		harness.Eventually(t, 10*time.Second, func() error {
			s := &corev1.Secret{}
			if err := admin.Get(ctx, client.ObjectKeyFromObject(secret), s); err != nil {
				return err
			}
			served := map[string][]byte{"a": mustRead(filepath.Join(first.CertDir(), "tls.crt")), "b": second.servedCert(), "c": third.servedCert()}
			for name, cert := range served {
				if !bytes.Equal(cert, s.Data["tls.crt"]) {
					return fmt.Errorf("replica %s does not serve the Secret's certificate", name)
				}
			}
			return nil
		})
	})
}

func mustRead(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

var guardedCount atomic.Int64

var quietOnce sync.Once

// quietControllerRuntime gives controller-runtime's global logger (which
// cert-controller and controller-runtime's clients log through in this
// process) a sink, instead of its complaint that none was set.
func quietControllerRuntime() {
	quietOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })
}

// admissionCalls makes one call through each kind of webhook and says
// whether Steward answered it.
type admissionCalls struct {
	ctx      context.Context
	jane     client.Client
	flux     client.Client
	warnings *warningLog
	guarded  *corev1.ConfigMap
}

func newAdmissionCalls(t *testing.T, ctx context.Context) *admissionCalls {
	t.Helper()
	agent, err := env.As("system:serviceaccount:cattle-fleet-system:fleet-agent")
	if err != nil {
		t.Fatal(err)
	}
	guarded := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   "default",
			Name:        fmt.Sprintf("certs-rotation-guarded-%d", guardedCount.Add(1)),
			Labels:      map[string]string{"objectset.rio.cattle.io/hash": "0123456789abcdef"},
			Annotations: map[string]string{"objectset.rio.cattle.io/id": "default-certs-rotation"},
		},
		Data: map[string]string{"k": "v"},
	}
	if err := agent.Create(ctx, guarded); err != nil {
		t.Fatalf("the Fleet agent creating a Fleet-managed ConfigMap: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), guarded) })
	jane, err := env.As("jane", "devs")
	if err != nil {
		t.Fatal(err)
	}
	rec := &warningLog{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = rec
	flux, err := client.New(cfg, client.Options{Scheme: harness.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &admissionCalls{ctx: ctx, jane: jane, flux: flux, warnings: rec, guarded: guarded}
}

// validating: jane's edit of a Fleet-managed ConfigMap must be refused by
// fleetguard (failurePolicy Fail: a TLS failure would be another error).
func (a *admissionCalls) validating(i int) error {
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"data":{"k":"edit-%d"}}`, i)))
	err := a.jane.Patch(a.ctx, a.guarded.DeepCopy(), patch)
	if err == nil {
		return errors.New("validating: jane's edit of a Fleet-managed ConfigMap was allowed")
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "fleetguard:") {
		return fmt.Errorf("validating: not Steward's answer: %v", err)
	}
	return nil
}

// mutating: a dry-run create through a deprecated Flux version must get
// apimigration's warning or refusal (failurePolicy Ignore: a TLS failure
// would be a silent allow without either).
func (a *admissionCalls) mutating(i int) error {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1beta2")
	u.SetKind("Kustomization")
	u.SetNamespace("default")
	u.SetName(fmt.Sprintf("certs-rotation-%d", i))
	_ = unstructured.SetNestedField(u.Object, "10m", "spec", "interval")
	_ = unstructured.SetNestedField(u.Object, true, "spec", "prune")
	_ = unstructured.SetNestedMap(u.Object, map[string]any{"kind": "GitRepository", "name": "apps"}, "spec", "sourceRef")
	a.warnings.reset()
	err := a.flux.Create(a.ctx, u, client.DryRunAll)
	if err != nil && strings.Contains(err.Error(), "apimigration:") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mutating: not Steward's answer: %v", err)
	}
	if !a.warnings.contains("apimigration:") {
		return fmt.Errorf("mutating: allowed without Steward's warning (warnings: %q)", a.warnings.all())
	}
	return nil
}

// bundleCAs returns the CAs in the first validating webhook's caBundle.
func bundleCAs(t *testing.T, ctx context.Context) []*x509.Certificate {
	t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, vwc); err != nil {
		t.Fatal(err)
	}
	var out []*x509.Certificate
	if len(vwc.Webhooks) == 0 {
		return nil
	}
	data := vwc.Webhooks[0].ClientConfig.CABundle
	for len(data) > 0 {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
	return out
}

func sha256Of(b []byte) [32]byte { return sha256.Sum256(b) }
