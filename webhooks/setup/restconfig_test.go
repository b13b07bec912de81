package setup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRestConfigAsksForUncompressedResponses proves Steward does not ask
// the API server to gzip what it sends: for watches the API server starts a
// new gzip stream for every event, which costs both sides more CPU than the
// bytes it saves on a cluster network.
func TestRestConfigAsksForUncompressedResponses(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	const doc = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: "t"}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`
	if err := os.WriteFile(kubeconfig, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"--kubeconfig": kubeconfig, "$KUBECONFIG": ""} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", kubeconfig)
			cfg, err := RESTConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			if !cfg.DisableCompression {
				t.Error("DisableCompression is false: the API server would gzip every watch event Steward's informers receive")
			}
		})
	}
}

func TestRestConfigNamesTheBadKubeconfig(t *testing.T) {
	_, err := RESTConfig(filepath.Join(t.TempDir(), "missing"))
	if err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Fatalf("err = %v, want one naming --kubeconfig", err)
	}
}
