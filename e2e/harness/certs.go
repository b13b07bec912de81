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

// NewServingCert creates a CA and a certificate for 127.0.0.1 and localhost,
// the names the API server dials Steward by. Keys are ECDSA P-256, like the
// ones the cert-manager overlay issues: a TLS handshake with them costs a
// fraction of an RSA one, which matters when the API server opens hundreds of
// connections at once.
func NewServingCert() (ServingCert, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return ServingCert{}, fmt.Errorf("generating the CA key: %w", err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "steward-e2e-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return ServingCert{}, fmt.Errorf("signing the CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return ServingCert{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return ServingCert{}, fmt.Errorf("generating the serving key: %w", err)
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		return ServingCert{}, fmt.Errorf("signing the serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return ServingCert{}, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	leafPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})
	return ServingCert{
		CA:   caPEM,
		Cert: append(leafPEM, caPEM...),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
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
