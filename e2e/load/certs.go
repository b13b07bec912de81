package main

import (
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/util/cert"
)

// servingCert is a self-signed CA and a serving certificate for 127.0.0.1
// it signed, for the webhook servers this tool runs itself.
type servingCert struct {
	CA, Cert, Key []byte
}

func newServingCert() (servingCert, error) {
	chain, key, err := cert.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return servingCert{}, fmt.Errorf("generating a serving certificate: %w", err)
	}
	leaf, rest := pem.Decode(chain)
	ca, _ := pem.Decode(rest)
	if leaf == nil || ca == nil {
		return servingCert{}, errors.New("generating a serving certificate: expected a certificate and its CA")
	}
	return servingCert{CA: pem.EncodeToMemory(ca), Cert: chain, Key: key}, nil
}

// write stores the pair as tls.crt and tls.key, the names
// controller-runtime's webhook server reads.
func (c servingCert) write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"tls.crt": c.Cert, "tls.key": c.Key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
