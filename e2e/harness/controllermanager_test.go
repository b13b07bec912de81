package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestControllerManagerBinaryIsFoundBesideTheAPIServer proves the path is
// read from the tools cache the API server is found in, and that a cache
// built before kube-controller-manager was added to it (or the oldest
// version's, which has none) is refused with the command that builds it.
func TestControllerManagerBinaryIsFoundBesideTheAPIServer(t *testing.T) {
	tests := map[string]struct {
		files   []string
		wantErr string
	}{
		"BuiltBesideTheAPIServer": {files: []string{"kube-apiserver", "etcd", "kube-controller-manager"}},
		"MissingFromTheCache":     {files: []string{"kube-apiserver", "etcd"}, wantErr: "kube-controller-manager is missing from "},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("KUBEBUILDER_ASSETS", dir)
			got, err := ControllerManagerBinary()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "make tools") {
					t.Fatalf("ControllerManagerBinary() = %q, %v; want an error saying %q and naming make tools", got, err, tc.wantErr)
				}
				return
			}
			if want := filepath.Join(dir, "kube-controller-manager"); err != nil || got != want {
				t.Errorf("ControllerManagerBinary() = %q, %v; want %q", got, err, want)
			}
		})
	}
}
