package certs

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"time"
)

// maxBundleCAs caps the CA bundle: the current CA and the newest CAs before
// it that are still valid. With the lifetimes Validate enforces only the
// current and the previous CA are ever valid together; the third slot
// absorbs forced rotations (a Secret emptied by hand) and replicas whose view
// of the Secret lags behind.
const maxBundleCAs = 3

// caSet is a set of CA certificates in bundle order: the current CA first,
// then the others newest first.
type caSet []*x509.Certificate

// desiredBundle is the bundle to inject: the current CA, plus the CAs
// already in the webhook configurations that are still valid at now (they
// may have signed a certificate a replica still serves), newest first.
// Expired CAs, non-CA certificates and unparsable blocks are dropped:
// nothing they signed can verify any more.
func desiredBundle(current *x509.Certificate, existing [][]byte, now time.Time) caSet {
	set := caSet{current}
	var others caSet
	for _, b := range existing {
		for _, c := range parseCertificates(b) {
			if !c.IsCA || !c.BasicConstraintsValid || now.After(c.NotAfter) {
				continue
			}
			if set.contains(c) || others.contains(c) {
				continue
			}
			others = append(others, c)
		}
	}
	slices.SortFunc(others, func(a, b *x509.Certificate) int {
		if c := b.NotBefore.Compare(a.NotBefore); c != 0 {
			return c
		}
		return bytes.Compare(a.Raw, b.Raw)
	})
	for _, c := range others {
		if len(set) == maxBundleCAs {
			break
		}
		set = append(set, c)
	}
	return set
}

// pem encodes the set as a caBundle.
func (s caSet) pem() []byte {
	var b bytes.Buffer
	for _, c := range s {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

func (s caSet) contains(c *x509.Certificate) bool {
	return slices.ContainsFunc(s, func(x *x509.Certificate) bool { return bytes.Equal(x.Raw, c.Raw) })
}

// sameAs reports whether bundle holds exactly the CAs of s, in any order.
// Order does not matter to the API server, so a bundle that differs only in
// order is left alone, and replicas never rewrite each other's bundles.
func (s caSet) sameAs(bundle []byte) bool {
	got := parseCertificates(bundle)
	if len(got) != len(s) {
		return false
	}
	for _, c := range got {
		if !s.contains(c) {
			return false
		}
	}
	return true
}

// pool returns the set as roots for verification.
func (s caSet) pool() *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range s {
		p.AddCert(c)
	}
	return p
}

// nextExpiry is when the first CA of the set expires.
func (s caSet) nextExpiry() time.Time {
	var first time.Time
	for _, c := range s {
		if first.IsZero() || c.NotAfter.Before(first) {
			first = c.NotAfter
		}
	}
	return first
}

// parseCertificates returns every parsable CERTIFICATE block in b.
func parseCertificates(b []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for len(b) > 0 {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// parseCA returns the first certificate of b if it is a CA.
func parseCA(b []byte) (*x509.Certificate, bool) {
	certs := parseCertificates(b)
	if len(certs) == 0 || !certs[0].IsCA {
		return nil, false
	}
	return certs[0], true
}

// fingerprint identifies a certificate.
func fingerprint(c *x509.Certificate) [sha256.Size]byte {
	return sha256.Sum256(c.Raw)
}
