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

// dataLink is the symlink in the certificate directory that points at the
// directory holding the current pair, the layout the kubelet uses for Secret
// volumes: tls.crt -> ..data/tls.crt, tls.key -> ..data/tls.key.
const dataLink = "..data"

// writeKeyPair makes dir serve p, switching certificate and key together: it
// writes both into a new hidden directory, then atomically renames the
// ..data symlink onto it and removes the previous directory. A reader sees
// either the old pair or the new one, never a mix. controller-runtime's
// certwatcher notices the switch when the previous files are removed (its
// watch follows the symlinks to them), and re-reads both through the links.
func writeKeyPair(dir string, p keyPair) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating certificate directory: %w", err)
	}
	previous, _ := os.Readlink(filepath.Join(dir, dataLink))
	data, err := os.MkdirTemp(dir, "..pair-")
	if err != nil {
		return fmt.Errorf("writing the certificate: %w", err)
	}
	for name, content := range map[string][]byte{certFile: p.cert, keyFile: p.key} {
		if err := os.WriteFile(filepath.Join(data, name), content, 0o600); err != nil {
			_ = os.RemoveAll(data)
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	if err := replaceWithSymlink(dir, dataLink, filepath.Base(data)); err != nil {
		_ = os.RemoveAll(data)
		return err
	}
	for _, name := range []string{certFile, keyFile} {
		target := filepath.Join(dataLink, name)
		if current, err := os.Readlink(filepath.Join(dir, name)); err == nil && current == target {
			continue
		}
		// First write into this directory (or one holding plain files):
		// each name becomes a link into ..data.
		if err := replaceWithSymlink(dir, name, target); err != nil {
			return err
		}
	}
	if previous != "" && previous != filepath.Base(data) && !filepath.IsAbs(previous) {
		if err := os.RemoveAll(filepath.Join(dir, previous)); err != nil {
			return fmt.Errorf("removing the previous certificate: %w", err)
		}
	}
	return nil
}

// replaceWithSymlink atomically makes dir/name a symlink to target.
func replaceWithSymlink(dir, name, target string) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("linking %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("linking %s: %w", name, err)
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
