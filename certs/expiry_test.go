package certs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func expiryScrape(notAfter time.Time) string {
	return fmt.Sprintf(`# HELP steward_serving_certificate_expiry_timestamp_seconds When the serving certificate in the certificate directory expires (its notAfter), in seconds since the epoch.
# TYPE steward_serving_certificate_expiry_timestamp_seconds gauge
steward_serving_certificate_expiry_timestamp_seconds %d
`, notAfter.Unix())
}

func TestServingCertificateExpiryFollowsTheServedCertificate(t *testing.T) {
	dir := t.TempDir()
	c := ServingCertificateExpiry(dir)
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("with no certificate yet: %d samples, want none", n)
	}

	now := time.Now().Truncate(time.Second)
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(365*24*time.Hour))
	first := now.Add(90 * 24 * time.Hour)
	if err := writeKeyPair(dir, ca.leaf(t, now.Add(-time.Hour), first)); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(expiryScrape(first))); err != nil {
		t.Errorf("after the first certificate: %v", err)
	}

	// A rotation (cert-manager's or the self-managed mode's) swaps the
	// files; the next scrape reports the new certificate.
	renewed := now.Add(180 * 24 * time.Hour)
	if err := writeKeyPair(dir, ca.leaf(t, now.Add(-time.Hour), renewed)); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(expiryScrape(renewed))); err != nil {
		t.Errorf("after rotation: %v", err)
	}

	if err := os.WriteFile(filepath.Join(dir, "..data", certFile), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("with an unparseable certificate: %d samples, want none", n)
	}
}
