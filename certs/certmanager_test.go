package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

func TestCertManagerObjectsFormAConsistentChain(t *testing.T) {
	objs := CertManagerObjects("steward-system", "steward", "steward-serving-cert")

	issuers := map[string]*cmv1.Issuer{}
	certs := map[string]*cmv1.Certificate{}
	for _, o := range objs {
		if o.GetNamespace() != "steward-system" {
			t.Errorf("%s %s is in namespace %q, want steward-system", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), o.GetNamespace())
		}
		switch v := o.(type) {
		case *cmv1.Issuer:
			issuers[v.Name] = v
		case *cmv1.Certificate:
			certs[v.Name] = v
		default:
			t.Fatalf("unexpected object %T", o)
		}
	}

	selfSigned := issuers[SelfSignedIssuerName]
	if selfSigned == nil || selfSigned.Spec.SelfSigned == nil {
		t.Fatalf("Issuer %s must be selfSigned: %+v", SelfSignedIssuerName, selfSigned)
	}
	ca := certs[CACertificateName]
	if ca == nil || !ca.Spec.IsCA {
		t.Fatalf("Certificate %s must be a CA: %+v", CACertificateName, ca)
	}
	if ca.Spec.IssuerRef.Name != SelfSignedIssuerName || ca.Spec.IssuerRef.Kind != cmv1.IssuerKind {
		t.Errorf("CA certificate is issued by %+v, want the self-signed Issuer", ca.Spec.IssuerRef)
	}
	caIssuer := issuers[CAIssuerName]
	if caIssuer == nil || caIssuer.Spec.CA == nil {
		t.Fatalf("Issuer %s must be a CA issuer: %+v", CAIssuerName, caIssuer)
	}
	if caIssuer.Spec.CA.SecretName != ca.Spec.SecretName {
		t.Errorf("CA Issuer signs with Secret %q, but the CA certificate is stored in %q", caIssuer.Spec.CA.SecretName, ca.Spec.SecretName)
	}
	serving := certs[ServingCertificateName]
	if serving == nil || serving.Spec.IsCA {
		t.Fatalf("Certificate %s must be a leaf: %+v", ServingCertificateName, serving)
	}
	if serving.Spec.IssuerRef.Name != CAIssuerName || serving.Spec.IssuerRef.Kind != cmv1.IssuerKind {
		t.Errorf("serving certificate is issued by %+v, want the CA Issuer", serving.Spec.IssuerRef)
	}
	if serving.Spec.SecretName != "steward-serving-cert" {
		t.Errorf("serving certificate Secret = %q, want the name the Deployment mounts", serving.Spec.SecretName)
	}
	wantDNS := []string{"steward", "steward.steward-system", "steward.steward-system.svc", "steward.steward-system.svc.cluster.local"}
	if diff := cmp.Diff(wantDNS, serving.Spec.DNSNames); diff != "" {
		t.Errorf("serving DNS names (-want +got):\n%s", diff)
	}
	if ca.Spec.PrivateKey.RotationPolicy != cmv1.RotationPolicyNever {
		t.Errorf("CA key rotation policy = %q: a renewed CA with a new key would not verify serving certificates signed before the renewal", ca.Spec.PrivateKey.RotationPolicy)
	}
	for _, c := range []*cmv1.Certificate{ca, serving} {
		if c.Spec.PrivateKey.Algorithm != cmv1.ECDSAKeyAlgorithm || c.Spec.PrivateKey.Size != 256 {
			t.Errorf("%s key = %s/%d, want ECDSA P-256", c.Name, c.Spec.PrivateKey.Algorithm, c.Spec.PrivateKey.Size)
		}
		if c.Spec.RenewBefore.Duration >= c.Spec.Duration.Duration {
			t.Errorf("%s renews %s before expiry but lives only %s", c.Name, c.Spec.RenewBefore.Duration, c.Spec.Duration.Duration)
		}
	}
	// A serving certificate signed just before the CA renews is itself
	// renewed (by the renewed CA) before the old CA certificate, still in
	// the caBundle until then, expires.
	if interval := serving.Spec.Duration.Duration - serving.Spec.RenewBefore.Duration; ca.Spec.RenewBefore.Duration <= interval {
		t.Errorf("CA renews %s before expiry, not more than the serving certificate's renewal interval %s: the bundle could hold an expired CA", ca.Spec.RenewBefore.Duration, interval)
	}
	if ca.Spec.Duration.Duration <= serving.Spec.Duration.Duration {
		t.Errorf("CA lives %s, not longer than the serving certificate's %s", ca.Spec.Duration.Duration, serving.Spec.Duration.Duration)
	}
}

func TestInjectCAAnnotationNamesTheServingCertificate(t *testing.T) {
	key, value := InjectCAAnnotation("steward-system")
	if key != "cert-manager.io/inject-ca-from" {
		t.Errorf("key = %q", key)
	}
	var servingNamespace, servingName string
	for _, o := range CertManagerObjects("steward-system", "steward", "steward-serving-cert") {
		if c, ok := o.(*cmv1.Certificate); ok && !c.Spec.IsCA {
			servingNamespace, servingName = c.Namespace, c.Name
		}
	}
	if want := servingNamespace + "/" + servingName; value != want {
		t.Errorf("value = %q, want the serving Certificate %q", value, want)
	}
}

func TestCertManagerObjectsRenderWithTypeMeta(t *testing.T) {
	for _, o := range CertManagerObjects("steward-system", "steward", "steward-serving-cert") {
		gvk := o.GetObjectKind().GroupVersionKind()
		if gvk.GroupVersion().String() != "cert-manager.io/v1" || (gvk.Kind != "Issuer" && gvk.Kind != "Certificate") {
			t.Errorf("%s has TypeMeta %v", o.GetName(), gvk)
		}
		out, err := yaml.Marshal(o)
		if err != nil {
			t.Fatalf("rendering %s: %v", o.GetName(), err)
		}
		var back struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(out, &back); err != nil || back.APIVersion != "cert-manager.io/v1" || back.Kind != gvk.Kind {
			t.Errorf("%s renders without its apiVersion/kind:\n%s", o.GetName(), out)
		}
	}
	var _ []client.Object = CertManagerObjects("", "", "")
}

// TestRenewedCAWithSameKeyVerifiesOldLeaf proves what the CA's
// rotationPolicy Never relies on: Go's verifier (which the API server uses)
// accepts a serving certificate signed by the previous CA certificate when
// only the renewed one, with the same subject and key, is trusted, and the
// other way round.
func TestRenewedCAWithSameKeyVerifiesOldLeaf(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	newCA := func(serial int64, notBefore time.Time, validity time.Duration) *x509.Certificate {
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(serial),
			Subject:               pkix.Name{CommonName: CACertificateName},
			NotBefore:             notBefore,
			NotAfter:              notBefore.Add(validity),
			IsCA:                  true,
			BasicConstraintsValid: true,
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	oldCA := newCA(1, now.Add(-300*24*time.Hour), CADuration)
	renewedCA := newCA(2, now.Add(-time.Hour), CADuration)
	expiredCA := newCA(3, now.Add(-400*24*time.Hour), CADuration)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafSignedBy := func(ca *x509.Certificate) *x509.Certificate {
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(10),
			DNSNames:     []string{"steward.steward-system.svc"},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(ServingDuration),
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			KeyUsage:     x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &leafKey.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c
	}
	for name, tc := range map[string]struct {
		signer, trusted *x509.Certificate
		wantOK          bool
	}{
		"LeafSignedBeforeRenewalRenewedCAInBundle": {oldCA, renewedCA, true},
		"LeafSignedAfterRenewalOldCAInBundle":      {renewedCA, oldCA, true},
		// Why CARenewBefore must exceed the serving renewal interval: an
		// expired CA certificate in the bundle verifies nothing.
		"ExpiredCAInBundle": {renewedCA, expiredCA, false},
	} {
		t.Run(name, func(t *testing.T) {
			pool := x509.NewCertPool()
			pool.AddCert(tc.trusted)
			_, err := leafSignedBy(tc.signer).Verify(x509.VerifyOptions{DNSName: "steward.steward-system.svc", Roots: pool})
			if (err == nil) != tc.wantOK {
				t.Errorf("verify: %v, want success %v", err, tc.wantOK)
			}
		})
	}
}
