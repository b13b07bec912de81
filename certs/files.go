package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// File and Secret keys: the names controller-runtime's webhook server reads
// from its CertDir and cert-controller writes into the Secret.
const (
	certFile    = "tls.crt"
	keyFile     = "tls.key"
	caCertKey   = "ca.crt"
	bootstrapCN = "steward-bootstrap-untrusted"
)

// keyPair is a PEM certificate and key.
type keyPair struct{ cert, key []byte }

func (p keyPair) equal(o keyPair) bool {
	return bytes.Equal(p.cert, o.cert) && bytes.Equal(p.key, o.key)
}

// leaf parses the pair's first certificate.
func (p keyPair) leaf() (*x509.Certificate, error) {
	c, err := tls.X509KeyPair(p.cert, p.key)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(c.Certificate[0])
}

// readKeyPair reads tls.crt and tls.key from dir.
func readKeyPair(dir string) (keyPair, error) {
	cert, err := os.ReadFile(filepath.Join(dir, certFile))
	if err != nil {
		return keyPair{}, err
	}
	key, err := os.ReadFile(filepath.Join(dir, keyFile))
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{cert: cert, key: key}, nil
}

// writeKeyPair replaces tls.key and then tls.crt in dir, each by an atomic
// rename, so a reader never sees a half-written file. Between the two
// renames the files do not match; controller-runtime's certwatcher refuses
// such a pair and keeps serving the previous certificate until the second
// rename, which it notices through fsnotify (or its periodic re-read).
func writeKeyPair(dir string, p keyPair) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating certificate directory: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{keyFile, p.key}, {certFile, p.cert}} {
		tmp, err := os.CreateTemp(dir, "."+f.name+"-*")
		if err != nil {
			return fmt.Errorf("writing %s: %w", f.name, err)
		}
		_, werr := tmp.Write(f.data)
		cerr := tmp.Close()
		if werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Chmod(tmp.Name(), 0o600)
		}
		if werr == nil {
			werr = os.Rename(tmp.Name(), filepath.Join(dir, f.name))
		}
		if werr != nil {
			_ = os.Remove(tmp.Name())
			return fmt.Errorf("writing %s: %w", f.name, werr)
		}
	}
	return nil
}

// ensureBootstrapKeyPair writes a throwaway self-signed certificate into dir
// unless it already holds a usable key pair. The webhook server refuses to
// start without one, and it starts before the Secret has been read. No
// caBundle ever trusts this certificate, and Steward reports unready until
// the real one replaces it, so no API server request is answered with it.
func ensureBootstrapKeyPair(dir string, now time.Time) (bool, error) {
	if p, err := readKeyPair(dir); err == nil {
		if _, err := p.leaf(); err == nil {
			return false, nil
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return false, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return false, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: bootstrapCN},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return false, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return false, err
	}
	p := keyPair{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	return true, writeKeyPair(dir, p)
}
