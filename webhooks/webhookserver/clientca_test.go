package webhookserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// testCA is a CA that signs client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// client is a TLS client certificate signed by the CA.
func (ca testCA) client(t *testing.T) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// tlsServer serves 200 with the webhook listener's TLS options.
func tlsServer(t *testing.T, opts ...func(*tls.Config)) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.TLS = &tls.Config{}
	for _, o := range append(tlsOptions(false), opts...) {
		o(srv.TLS)
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// get reports whether a client with cfg gets an answer from srv.
func get(srv *httptest.Server, cfg *tls.Config) error {
	cfg.RootCAs = srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 5 * time.Second}
	resp, err := c.Get(srv.URL)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func TestClientCAIsReloadedWithoutRestart(t *testing.T) {
	oldCA, newCA := newTestCA(t, "old"), newTestCA(t, "new")
	path := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(path, oldCA.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	cas := newClientCAs(path, logr.Discard())
	srv := tlsServer(t, cas.configure)
	asOld := &tls.Config{Certificates: []tls.Certificate{oldCA.client(t)}}
	asNew := &tls.Config{Certificates: []tls.Certificate{newCA.client(t)}}

	if err := get(srv, asOld.Clone()); err != nil {
		t.Errorf("a client of the configured CA: %v", err)
	}
	if err := get(srv, asNew.Clone()); err == nil {
		t.Error("a client of another CA was served")
	}
	if err := get(srv, &tls.Config{}); err == nil {
		t.Error("a client without a certificate was served")
	}

	if err := os.WriteFile(path, newCA.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cas.reload(); err != nil {
		t.Fatal(err)
	}
	if err := get(srv, asNew.Clone()); err != nil {
		t.Errorf("after the CA file changed, a client of the new CA: %v", err)
	}
	if err := get(srv, asOld.Clone()); err == nil {
		t.Error("after the CA file changed, a client of the old CA was still served")
	}

	// A file rewritten with no certificate keeps the last good CA.
	if err := os.WriteFile(path, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cas.reload(); err == nil {
		t.Error("reloading a file with no certificate reported no error")
	}
	if err := get(srv, asNew.Clone()); err != nil {
		t.Errorf("after a broken rewrite, the last good CA's client: %v", err)
	}
}

func TestClientCAFileWithoutCertificatesRefusesEveryone(t *testing.T) {
	ca := newTestCA(t, "ca")
	path := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := tlsServer(t, newClientCAs(path, logr.Discard()).configure)
	if err := get(srv, &tls.Config{Certificates: []tls.Certificate{ca.client(t)}}); err == nil {
		t.Error("with no client CA, a client with a certificate was served")
	}
}

func TestTLS12OffersOnlyAEADSuites(t *testing.T) {
	srv := tlsServer(t)
	cbc := &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
		tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_AES_256_CBC_SHA,
	}}
	if err := get(srv, cbc); err == nil {
		t.Error("a TLS 1.2 client offering only CBC suites completed a handshake")
	}
	if err := get(srv, &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}); err != nil {
		t.Errorf("a TLS 1.2 client offering AES-GCM: %v", err)
	}
	if err := get(srv, &tls.Config{MinVersion: tls.VersionTLS13}); err != nil {
		t.Errorf("a TLS 1.3 client: %v", err)
	}
}
