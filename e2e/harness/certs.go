package harness

import (
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/util/cert"
)

// servingCert is a CA and a serving certificate it signed.
type servingCert struct {
	// CA is the PEM CA certificate, the webhook configurations' caBundle.
	CA []byte
	// Cert is the PEM serving certificate followed by the CA.
	Cert []byte
	// Key is the PEM private key of Cert.
	Key []byte
}

// newServingCert creates a CA and a certificate for 127.0.0.1 and localhost,
// the names the API server dials Steward by.
func newServingCert() (servingCert, error) {
	chain, key, err := cert.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return servingCert{}, fmt.Errorf("generating a serving certificate: %w", err)
	}
	// The chain is the serving certificate followed by its CA.
	leaf, rest := pem.Decode(chain)
	ca, _ := pem.Decode(rest)
	if leaf == nil || ca == nil {
		return servingCert{}, errors.New("generating a serving certificate: expected a certificate and its CA")
	}
	return servingCert{CA: pem.EncodeToMemory(ca), Cert: chain, Key: key}, nil
}

// write stores the pair as tls.crt and tls.key (the names controller-runtime's
// webhook server reads from --cert-dir) and the CA as ca.crt.
func (c servingCert) write(dir string) error {
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
