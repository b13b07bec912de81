package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	cwmetrics "sigs.k8s.io/controller-runtime/pkg/certwatcher/metrics"
)

func TestBootstrapKeyPairLetsTheWebhookServerStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "serving-certs")
	wrote, err := ensureBootstrapKeyPair(dir, time.Now())
	if err != nil || !wrote {
		t.Fatalf("ensureBootstrapKeyPair = %v, %v; want a certificate written", wrote, err)
	}
	if _, err := certwatcher.New(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")); err != nil {
		t.Errorf("certwatcher refuses the bootstrap pair: %v", err)
	}
	info, err := os.Stat(filepath.Join(dir, "tls.key"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("tls.key mode = %v (%v), want 0600", info.Mode().Perm(), err)
	}
}

func TestBootstrapKeepsAnExistingPair(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(time.Hour))
	leaf := ca.leaf(t, now.Add(-time.Hour), now.Add(time.Hour))
	if err := writeKeyPair(dir, leaf); err != nil {
		t.Fatal(err)
	}
	if wrote, err := ensureBootstrapKeyPair(dir, now); err != nil || wrote {
		t.Errorf("ensureBootstrapKeyPair = %v, %v; a restarted container must keep serving its certificate", wrote, err)
	}
	if got, _ := readKeyPair(dir); !got.equal(leaf) {
		t.Error("the existing pair was changed")
	}
}

func TestWriteKeyPairLeavesOnlyTheCurrentPair(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(time.Hour))
	var last keyPair
	for range 3 {
		last = ca.leaf(t, now.Add(-time.Hour), now.Add(time.Hour))
		if err := writeKeyPair(dir, last); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 4 {
		t.Errorf("directory holds %v, want tls.crt, tls.key, ..data and one pair directory", names)
	}
	if got, _ := readKeyPair(dir); !got.equal(last) {
		t.Error("the directory does not serve the last pair written")
	}
}

// TestCertwatcherSeesEveryPairWhole proves the webhook server's reload:
// controller-runtime's certwatcher picks up each write, and never reads a
// certificate with the other pair's key (which it would log as an error and
// skip).
func TestCertwatcherSeesEveryPairWhole(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(time.Hour))
	if err := writeKeyPair(dir, ca.leaf(t, now.Add(-time.Hour), now.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	w, err := certwatcher.New(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	w = w.WithWatchInterval(time.Hour) // only fsnotify events count here
	loaded := make(chan []byte, 10)
	w.RegisterCallback(func(c tls.Certificate) { loaded <- c.Certificate[0] })
	<-loaded // the initial certificate
	errorsBefore := testutil.ToFloat64(cwmetrics.ReadCertificateErrors)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = w.Start(ctx) }()
	time.Sleep(200 * time.Millisecond) // let the watches be added

	for i := range 3 {
		next := ca.leaf(t, now.Add(-time.Hour), now.Add(time.Hour))
		if err := writeKeyPair(dir, next); err != nil {
			t.Fatal(err)
		}
		want, _ := next.leaf()
		select {
		case got := <-loaded:
			if !bytes.Equal(got, want.Raw) {
				t.Errorf("write %d: certwatcher loaded another certificate", i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("write %d: certwatcher did not reload within 5s", i)
		}
	}
	if n := testutil.ToFloat64(cwmetrics.ReadCertificateErrors) - errorsBefore; n != 0 {
		t.Errorf("certwatcher failed %v reads: it saw a certificate with the other pair's key", n)
	}
}
