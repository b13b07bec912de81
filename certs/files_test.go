package certs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
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

func TestWriteKeyPairLeavesNoTemporaryFiles(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(time.Hour))
	for range 2 {
		if err := writeKeyPair(dir, ca.leaf(t, now.Add(-time.Hour), now.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only tls.crt and tls.key", names)
	}
}
