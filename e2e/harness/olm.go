package harness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// OLMNamespace is the namespace OLM runs in: its service account, and
// the global catalog namespace its catalog operator is told it runs in.
const OLMNamespace = "olm"

// OLMServiceAccount is the service account both of OLM's operators run
// as (OLM's own install), the identity installplanguard's olmUsers
// exempts.
const OLMServiceAccount = "olm-operator-serviceaccount"

// OLMRelease is the OLM release whose catalog operator OLMBinaries
// returns (make olm builds it) and whose CRDs (e2e/upstream/olm-<release>)
// StartOLM installs.
const OLMRelease = "v0.33.0"

// OLMCatalogReadyTimeout bounds the wait for the catalog operator to
// connect to the catalog opm serves.
const OLMCatalogReadyTimeout = 2 * time.Minute

// olmMetricsAddr is where the catalog operator serves /metrics and
// /healthz: hard-coded, :8443 with TLS (:8080 without, which it is not
// given: other controllers of the e2e tests bind that one).
const olmMetricsAddr = ":8443"

// OLMUser is the user the API server sees OLM's operators as.
func OLMUser() string {
	return "system:serviceaccount:" + OLMNamespace + ":" + OLMServiceAccount
}

// OLMBinaries returns the catalog operator's and opm's binaries, from the
// OLM_CATALOG and OPM variables the Makefile exports (make olm builds
// them).
func OLMBinaries() (catalog, opm string, err error) {
	paths := map[string]string{}
	for _, v := range []string{"OLM_CATALOG", "OPM"} {
		path := os.Getenv(v)
		if path == "" {
			return "", "", fmt.Errorf("%s is not set: run through make e2e-extended, which builds OLM's catalog operator and opm (make olm)", v)
		}
		if _, err := os.Stat(path); err != nil {
			return "", "", fmt.Errorf("%s: %w: run make olm", v, err)
		}
		paths[v] = path
	}
	return paths["OLM_CATALOG"], paths["OPM"], nil
}

// OLM is OLM's catalog operator, the controller that resolves
// Subscriptions into InstallPlans and executes them, and opm serving one
// file-based catalog, running as local processes against the Env's API
// server. OLM's olm operator, which drives a ClusterServiceVersion's
// phases, does not run: what installplanguard keys on only the catalog
// operator writes.
type OLM struct {
	// CatalogSource is the CatalogSource, in OLMNamespace, that names the
	// catalog opm serves.
	CatalogSource string
	procs         *processes
}

// StartOLM installs OLMRelease's CRDs (over the ones every environment
// installs), creates OLMNamespace and OLM's service account bound to
// cluster-admin (as OLM's install binds it to a ClusterRole of every
// verb), serves the file-based catalog files (name to content, under one
// directory) with opm on a free loopback port, starts the catalog
// operator with a kubeconfig holding the service account's token, and
// creates the CatalogSource catalogSource in OLMNamespace with the
// catalog's address. It returns once the catalog operator reports the
// CatalogSource's connection READY. They are stopped when lt ends, and
// their logs written to lt's log if it failed.
//
// The catalog operator's metrics port is hard-coded (olmMetricsAddr): one
// runs at a time on a machine, and StartOLM fails saying so when the port
// is taken.
func (e *Env) StartOLM(ctx context.Context, lt Lifetime, catalogSource string, files map[string]string) (*OLM, error) {
	catalog, opm, err := OLMBinaries()
	if err != nil {
		return nil, err
	}
	if err := portFree(olmMetricsAddr, "OLM's catalog operator serves its metrics there, hard-coded"); err != nil {
		return nil, err
	}
	if err := e.installOLMCRDs(); err != nil {
		return nil, err
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OLMNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", OLMNamespace, err)
	}
	procs, err := e.newProcesses(lt, "olm-")
	if err != nil {
		return nil, err
	}
	o := &OLM{CatalogSource: catalogSource, procs: procs}
	catalogDir := filepath.Join(procs.dir, "catalog")
	for name, content := range files {
		path := filepath.Join(catalogDir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return nil, fmt.Errorf("writing the catalog's %s: %w", name, err)
		}
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	catalogAddr := "127.0.0.1:" + strconv.Itoa(port)
	// No profiling endpoint (its default, localhost:6060, is another
	// controller's), and the termination log a catalog pod writes goes to
	// the program's home.
	if err := procs.start(ctx, processSpec{
		name: "opm", binary: opm,
		args:      []string{"serve", catalogDir, "--port", strconv.Itoa(port), "--pprof-addr=", "--termination-log", filepath.Join(procs.dir, "opm", "termination.log")},
		readyAddr: catalogAddr,
	}); err != nil {
		return nil, err
	}
	kubeconfig, err := e.writeServiceAccountKubeconfig(ctx, procs.dir, OLMNamespace, OLMServiceAccount)
	if err != nil {
		return nil, err
	}
	// With a serving certificate the metrics server listens on :8443; it
	// then also needs a client CA (it verifies client certificates when
	// one is given).
	serving, err := NewServingCert()
	if err != nil {
		return nil, err
	}
	certDir, caDir := filepath.Join(procs.dir, "certs"), filepath.Join(procs.dir, "client-ca")
	if err := serving.Write(certDir); err != nil {
		return nil, err
	}
	if err := os.Mkdir(caDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(caDir, "ca.crt"), serving.CA, 0o600); err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(serving.CA) {
		return nil, errors.New("reading the CA of the catalog operator's serving certificate")
	}
	if err := procs.start(ctx, processSpec{
		name: "catalog-operator", binary: catalog,
		args: []string{"--kubeconfig", kubeconfig, "--namespace", OLMNamespace,
			"--tls-cert", filepath.Join(certDir, "tls.crt"), "--tls-key", filepath.Join(certDir, "tls.key"),
			"--client-ca", filepath.Join(caDir, "ca.crt")},
		readyURL: "https://127.0.0.1" + olmMetricsAddr + "/healthz",
		readyTLS: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	}); err != nil {
		return nil, err
	}
	source := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1",
		"kind":       "CatalogSource",
		"metadata":   map[string]any{"name": catalogSource, "namespace": OLMNamespace},
		"spec":       map[string]any{"sourceType": "grpc", "address": catalogAddr, "displayName": catalogSource},
	}}
	if err := e.Client.Create(ctx, source); err != nil {
		return nil, fmt.Errorf("creating CatalogSource %s/%s: %w", OLMNamespace, catalogSource, err)
	}
	err = Poll(ctx, OLMCatalogReadyTimeout, func() error {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(source), source); err != nil {
			return err
		}
		state, _, _ := unstructured.NestedString(source.Object, "status", "connectionState", "lastObservedState")
		if state != "READY" {
			return fmt.Errorf("CatalogSource %s/%s: the catalog operator reports its connection to %s as %q, not READY", OLMNamespace, catalogSource, catalogAddr, state)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w\n--- catalog-operator log (last lines) ---\n%s", err, logTail(filepath.Join(procs.dir, "catalog-operator.log"), 40))
	}
	return o, nil
}

// installOLMCRDs installs or replaces OLMRelease's CRDs, every kind of
// its chart, and waits until they are served.
func (e *Env) installOLMCRDs() error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "e2e", "upstream", "olm-"+OLMRelease)
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing OLM %s's CRDs: %w", OLMRelease, err)
	}
	return nil
}

// Log returns everything program ("catalog-operator" or "opm") has
// written so far.
func (o *OLM) Log(program string) string { return o.procs.log(program) }
