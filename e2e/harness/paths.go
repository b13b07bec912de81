package harness

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// RepoRoot returns the repository's root directory (where go.mod is), so that
// tests and the sandbox work from any working directory.
func RepoRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
		if isRepoRoot(root) {
			return root, nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for {
		if isRepoRoot(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding the repository root: no go.mod of github.com/stewardhq/steward above the working directory")
		}
		dir = parent
	}
}

func isRepoRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && strings.HasPrefix(string(data), "module github.com/stewardhq/steward\n")
}

// CRDDir returns the directory of the sample CRDs (e2e/crds): the kinds no
// upstream repository holds, such as the XR and claim CRDs Crossplane
// generates from an XRD, and the objects installed with them.
func CRDDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "e2e", "crds"), nil
}

// upstreamCRDDirs are the directories and files of e2e/upstream every
// environment installs: the real CRDs of the Crossplane, provider, OLM,
// Flux and Argo CD kinds the rules guard, copied unmodified from their releases (see
// e2e/upstream/SOURCES.md). Of Flux, only the kinds every test scripts
// against, at the release apimigration targets by default (2.6): tests
// install the other Flux kinds themselves, as a cluster would later.
var upstreamCRDDirs = [][]string{
	{"crossplane", "2.3"},
	{"provider-sql"},
	{"olm"},
	{"flux", "2.6", "kustomize.toolkit.fluxcd.io_kustomizations.yaml"},
	{"flux", "2.6", "source.toolkit.fluxcd.io_gitrepositories.yaml"},
	{"flux", "2.6", "helm.toolkit.fluxcd.io_helmreleases.yaml"},
	{"argocd", "3.6"},
}

// UpstreamCRDDirs returns the directories and files of the upstream CRDs
// every environment installs next to CRDDir's samples.
func UpstreamCRDDirs() ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(upstreamCRDDirs))
	for _, d := range upstreamCRDDirs {
		out = append(out, filepath.Join(append([]string{root, "e2e", "upstream"}, d...)...))
	}
	return out, nil
}

// WebhooksFile returns the path of the rendered webhook configurations.
func WebhooksFile() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "manifests", "base", "webhooks.yaml"), nil
}

// AssetsDir returns the directory holding kube-apiserver and etcd:
// $KUBEBUILDER_ASSETS as exported by the Makefile, or, when a test is run
// with plain `go test`, the cache directory the Makefile builds into. It fails
// with instructions when the binaries are missing; it never lets a test skip.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	source := "KUBEBUILDER_ASSETS"
	if dir == "" {
		var err error
		if dir, err = defaultAssetsDir(); err != nil {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS is not set and the default location is unknown (%v): run `make tools`, then run the tests through `make e2e` or `make test`", err)
		}
		source = "the default tools cache"
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("%s is missing from %s (%s): run `make tools` to build kube-apiserver and etcd, then run the tests through `make e2e` or `make test`", bin, dir, source)
		}
	}
	return dir, nil
}

// defaultAssetsDir mirrors the Makefile's ASSETS variable, reading the
// versions from the Makefile so that they are written down in one place.
func defaultAssetsDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	f, err := os.Open(filepath.Join(root, "Makefile"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	vars := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		name, value, ok := strings.Cut(s.Text(), ":=")
		if ok {
			vars[strings.TrimSpace(name)] = strings.TrimSpace(value)
		}
	}
	kube, etcd := vars["KUBE_VERSION"], vars["ETCD_VERSION"]
	if kube == "" || etcd == "" {
		return "", errors.New("the Makefile defines no KUBE_VERSION or ETCD_VERSION")
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "steward", "kube-"+kube+"-etcd-"+etcd), nil
}
