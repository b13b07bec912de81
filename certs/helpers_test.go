package certs

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
)

// testCA is a CA made the way cert-controller makes it, with a chosen
// validity, and able to sign serving certificates for the default options.
type testCA struct {
	*rotator.KeyPairArtifacts
	rot *rotator.CertRotator
}

func newTestCA(t *testing.T, notBefore, notAfter time.Time) testCA {
	t.Helper()
	dnsName, extra := DefaultSelfManagedOptions().rotatorDNSNames()
	rot := &rotator.CertRotator{
		CAName:         CACertificateName,
		CAOrganization: "steward",
		DNSName:        dnsName,
		ExtraDNSNames:  extra,
		ExtKeyUsages:   &[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	ca, err := rot.CreateCACert(notBefore, notAfter)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{KeyPairArtifacts: ca, rot: rot}
}

// leaf signs a serving certificate.
func (ca testCA) leaf(t *testing.T, notBefore, notAfter time.Time) keyPair {
	t.Helper()
	cert, key, err := ca.rot.CreateCertPEM(ca.KeyPairArtifacts, notBefore, notAfter)
	if err != nil {
		t.Fatal(err)
	}
	return keyPair{cert: cert, key: key}
}
