package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// ServingCert is a CA and a serving certificate it signed. Everything the
// harness and the load generator serve TLS with comes from NewServingCert,
// so Steward, the probe and the benchmark's allow-all webhook present the
// same key type and the same chain.
type ServingCert struct {
	// CA is the PEM CA certificate, the webhook configurations' caBundle.
	CA []byte
	// Cert is the PEM serving certificate followed by the CA.
	Cert []byte
	// Key is the PEM private key of Cert.
	Key []byte
}

// CA is a certificate authority for what the harness and the tests serve
// and present. Its keys and those it issues are ECDSA P-256, like the ones
// the cert-manager overlay issues: a TLS handshake with them costs a
// fraction of an RSA one, which matters when the API server opens hundreds
// of connections at once.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// PEM is the CA certificate, a caBundle.
	PEM []byte
}

// NewCA creates a self-signed CA.
func NewCA(name string) (*CA, error) {
	key, der, cert, err := newCert(&x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("creating CA %s: %w", name, err)
	}
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Issue signs a leaf certificate for usage and returns it and its key in
// PEM. Serving certificates are for 127.0.0.1 and localhost, the names the
// API server and the tests dial Steward by.
func (ca *CA) Issue(name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, leaf *x509.Certificate, err error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	key, der, leaf, err := newCert(tmpl, ca)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("issuing %s: %w", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), leaf, nil
}

// serial numbers certificates apart across every CA of the process.
var serial atomic.Int64

// newCert makes a key and a certificate for it from tmpl, valid from an
// hour ago for a day, signed by issuer (self-signed when issuer is nil).
func newCert(tmpl *x509.Certificate, issuer *CA) (*ecdsa.PrivateKey, []byte, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("generating a key: %w", err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano() + serial.Add(1))
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	parent, parentKey := tmpl, key
	if issuer != nil {
		parent, parentKey = issuer.Cert, issuer.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return key, der, cert, err
}

// NewServingCert creates a CA and a certificate it signed for 127.0.0.1
// and localhost.
func NewServingCert() (ServingCert, error) {
	ca, err := NewCA("steward-e2e-ca")
	if err != nil {
		return ServingCert{}, err
	}
	cert, key, _, err := ca.Issue("localhost", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return ServingCert{}, err
	}
	return ServingCert{CA: ca.PEM, Cert: append(cert, ca.PEM...), Key: key}, nil
}

// Write stores the pair as tls.crt and tls.key (the names controller-runtime's
// webhook server reads from --cert-dir) and the CA as ca.crt.
func (c ServingCert) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for name, data := range map[string][]byte{"tls.crt": c.Cert, "tls.key": c.Key, "ca.crt": c.CA} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
