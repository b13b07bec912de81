package certs

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ServingCertificateExpiry reports steward_serving_certificate_expiry_timestamp_seconds:
// when the certificate Steward serves expires, read from tls.crt in the
// certificate directory the webhook server serves from (filled by cert-manager
// or by the self-managed mode). A certificate that is not renewed is the most
// common way for a fail-closed webhook to block a cluster, so alerts watch
// this. The file is parsed again only when it changes; while it cannot be
// read or parsed, the metric is absent.
func ServingCertificateExpiry(dir string) prometheus.Collector {
	return &certExpiry{
		path: filepath.Join(dir, certFile),
		desc: prometheus.NewDesc("steward_serving_certificate_expiry_timestamp_seconds",
			"When the serving certificate in the certificate directory expires (its notAfter), in seconds since the epoch.", nil, nil),
	}
}

type certExpiry struct {
	path string
	desc *prometheus.Desc

	mu       sync.Mutex
	modTime  time.Time
	size     int64
	notAfter time.Time
}

func (c *certExpiry) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *certExpiry) Collect(ch chan<- prometheus.Metric) {
	if notAfter, ok := c.read(); ok {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(notAfter.Unix()))
	}
}

// read returns the leaf certificate's notAfter, parsing the file only when
// its size or modification time changed since the last scrape.
func (c *certExpiry) read() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, err := os.Stat(c.path)
	if err != nil {
		return time.Time{}, false
	}
	if info.ModTime().Equal(c.modTime) && info.Size() == c.size && !c.notAfter.IsZero() {
		return c.notAfter, true
	}
	c.modTime, c.size, c.notAfter = info.ModTime(), info.Size(), time.Time{}
	data, err := os.ReadFile(c.path)
	if err != nil {
		return time.Time{}, false
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return time.Time{}, false
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return time.Time{}, false
	}
	c.notAfter = leaf.NotAfter
	return c.notAfter, true
}
