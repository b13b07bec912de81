package harness

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// CrossplaneNamespace is the namespace Crossplane runs in, with its
// service accounts.
const CrossplaneNamespace = "crossplane-system"

// CrossplaneServiceAccount is the service account Crossplane's core runs
// as (Crossplane's Helm chart's).
const CrossplaneServiceAccount = "crossplane"

// ProviderNopServiceAccount is the service account provider-nop runs as.
// Crossplane's package manager names a provider's service account after
// its revision; none runs here, so the harness names it after the provider.
const ProviderNopServiceAccount = "provider-nop"

// FunctionPatchAndTransform is the name of the Function package whose
// active FunctionRevision StartCrossplane creates: a Composition's
// pipeline step names it in functionRef.
const FunctionPatchAndTransform = "function-patch-and-transform"

// crossplaneModules are the modules whose files StartCrossplane installs,
// each with the tool module that pins it (the version make crossplane
// builds): Crossplane's own CRDs (cluster/crds) and provider-nop's
// (package/crds).
var crossplaneModules = map[string]struct{ tool, module, crds string }{
	"crossplane":   {"tools/crossplane", "github.com/crossplane/crossplane/v2", "cluster/crds"},
	"provider-nop": {"tools/provider-nop", "github.com/crossplane-contrib/provider-nop", "package/crds"},
}

// CrossplaneUser is the user the API server sees Crossplane's core as.
func CrossplaneUser() string {
	return "system:serviceaccount:" + CrossplaneNamespace + ":" + CrossplaneServiceAccount
}

// ProviderNopUser is the user the API server sees provider-nop as.
func ProviderNopUser() string {
	return "system:serviceaccount:" + CrossplaneNamespace + ":" + ProviderNopServiceAccount
}

// CrossplaneBinaries returns Crossplane's, function-patch-and-transform's
// and provider-nop's binaries, from the CROSSPLANE,
// FUNCTION_PATCH_AND_TRANSFORM and PROVIDER_NOP variables the Makefile
// exports (make crossplane builds them).
func CrossplaneBinaries() (core, function, provider string, err error) {
	paths := map[string]string{}
	for _, v := range []string{"CROSSPLANE", "FUNCTION_PATCH_AND_TRANSFORM", "PROVIDER_NOP"} {
		path := os.Getenv(v)
		if path == "" {
			return "", "", "", fmt.Errorf("%s is not set: run through make e2e-crossplane, which builds Crossplane, function-patch-and-transform and provider-nop (make crossplane)", v)
		}
		if _, err := os.Stat(path); err != nil {
			return "", "", "", fmt.Errorf("%s: %w: run make crossplane", v, err)
		}
		paths[v] = path
	}
	return paths["CROSSPLANE"], paths["FUNCTION_PATCH_AND_TRANSFORM"], paths["PROVIDER_NOP"], nil
}

// crossplaneModuleDir returns the directory, in the Go module cache, of
// the module that the tool module tool pins: the very source make
// crossplane built, whose CRDs therefore match the binaries.
func crossplaneModuleDir(ctx context.Context, tool, module string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = filepath.Join(root, tool)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("finding %s in the module cache (go list -m in %s): %w: %s", module, tool, err, out)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("%s is not in the module cache: run make crossplane", module)
	}
	return dir, nil
}

// Crossplane is Crossplane's core, function-patch-and-transform and
// provider-nop, running as local processes against the Env's API server.
type Crossplane struct {
	procs *processes
}

// Log returns everything program ("crossplane", "function-patch-and-transform"
// or "provider-nop") has written so far.
func (c *Crossplane) Log(program string) string { return c.procs.log(program) }

// providerNopMetricsAddr is where provider-nop serves its metrics:
// controller-runtime's default, which it does not let a flag change.
const providerNopMetricsAddr = ":8080"

// StartCrossplane installs Crossplane's CRDs and provider-nop's from the
// module cache (the versions make crossplane built, over the ones every
// environment installs), creates CrossplaneNamespace and the service
// accounts of Crossplane's core and provider-nop bound to cluster-admin
// (as Crossplane's chart binds the core to a ClusterRole of every verb on
// what it manages), and starts:
//
//   - function-patch-and-transform on a free loopback port with an mTLS
//     serving certificate, found by Crossplane through an active
//     FunctionRevision created paused (crossplane.io/paused: the package
//     manager leaves it alone and pulls nothing) whose status carries the
//     endpoint and the composition capability;
//   - provider-nop, with the webhook certificate directory it requires;
//   - Crossplane's core, `crossplane core start` with its webhooks off,
//     the External package runtime (it deploys nothing), the client
//     certificate the function verifies, and its metrics and health ports
//     on free loopback ports.
//
// They run with kubeconfigs holding their service accounts' tokens, are
// stopped when lt ends, and their logs written to lt's log if it failed.
// provider-nop's metrics port is hard-coded (:8080): StartCrossplane fails
// saying so when it is taken.
func (e *Env) StartCrossplane(ctx context.Context, lt Lifetime) (*Crossplane, error) {
	core, function, provider, err := CrossplaneBinaries()
	if err != nil {
		return nil, err
	}
	if err := portFree(providerNopMetricsAddr, "provider-nop serves its metrics there, hard-coded"); err != nil {
		return nil, err
	}
	var paths []string
	for _, name := range []string{"crossplane", "provider-nop"} {
		m := crossplaneModules[name]
		dir, err := crossplaneModuleDir(ctx, m.tool, m.module)
		if err != nil {
			return nil, err
		}
		paths = append(paths, filepath.Join(dir, m.crds))
	}
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		return nil, fmt.Errorf("installing Crossplane's and provider-nop's CRDs: %w", err)
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CrossplaneNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", CrossplaneNamespace, err)
	}
	procs, err := e.newProcesses(lt, "crossplane-")
	if err != nil {
		return nil, err
	}
	c := &Crossplane{procs: procs}

	// One CA signs the function's serving certificate and Crossplane's
	// client certificate; each side verifies the other with it (ca.crt).
	ca, err := NewCA("crossplane-e2e-ca")
	if err != nil {
		return nil, err
	}
	writePair := func(dir, name string, usage x509.ExtKeyUsage) error {
		cert, key, _, err := ca.Issue(name, usage)
		if err != nil {
			return err
		}
		return ServingCert{CA: ca.PEM, Cert: cert, Key: key}.Write(dir)
	}
	functionCerts, clientCerts := filepath.Join(procs.dir, "function-certs"), filepath.Join(procs.dir, "client-certs")
	if err := writePair(functionCerts, FunctionPatchAndTransform, x509.ExtKeyUsageServerAuth); err != nil {
		return nil, err
	}
	if err := writePair(clientCerts, "crossplane", x509.ExtKeyUsageClientAuth); err != nil {
		return nil, err
	}
	fnPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	fnAddr := "127.0.0.1:" + strconv.Itoa(fnPort)
	if err := procs.start(ctx, processSpec{
		name: FunctionPatchAndTransform, binary: function,
		args:      []string{"--address=" + fnAddr, "--tls-certs-dir=" + functionCerts},
		readyAddr: fnAddr,
	}); err != nil {
		return nil, err
	}
	if err := e.createFunctionRevision(ctx, fnAddr); err != nil {
		return nil, err
	}

	providerKubeconfig, err := e.writeServiceAccountKubeconfig(ctx, procs.dir, CrossplaneNamespace, ProviderNopServiceAccount)
	if err != nil {
		return nil, err
	}
	webhookCerts := filepath.Join(procs.dir, "provider-nop-certs")
	if err := writePair(webhookCerts, "provider-nop", x509.ExtKeyUsageServerAuth); err != nil {
		return nil, err
	}
	if err := procs.start(ctx, processSpec{
		name: "provider-nop", binary: provider,
		args:      []string{"--poll=5s"},
		env:       []string{"KUBECONFIG=" + providerKubeconfig, "WEBHOOK_TLS_CERT_DIR=" + webhookCerts},
		readyAddr: "127.0.0.1" + providerNopMetricsAddr,
	}); err != nil {
		return nil, err
	}

	coreKubeconfig, err := e.writeServiceAccountKubeconfig(ctx, procs.dir, CrossplaneNamespace, CrossplaneServiceAccount)
	if err != nil {
		return nil, err
	}
	metricsPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	home := filepath.Join(procs.dir, "crossplane-cache")
	if err := procs.start(ctx, processSpec{
		name: "crossplane", binary: core,
		args: []string{"core", "start",
			"--enable-webhooks=false",
			"--package-runtime=External",
			"--tls-client-certs-dir=" + clientCerts,
			"--metrics-port=" + strconv.Itoa(metricsPort),
			"--health-probe-port=" + strconv.Itoa(healthPort),
			"--xpkg-cache-dir=" + filepath.Join(home, "xpkg"),
			"--xfn-cache-dir=" + filepath.Join(home, "xfn"),
			"--poll-interval=5s",
		},
		env:       []string{"KUBECONFIG=" + coreKubeconfig, "POD_NAMESPACE=" + CrossplaneNamespace, "POD_SERVICE_ACCOUNT=" + CrossplaneServiceAccount},
		readyAddr: "127.0.0.1:" + strconv.Itoa(healthPort),
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// createFunctionRevision creates FunctionPatchAndTransform's active
// revision, paused so that Crossplane's package manager neither pulls its
// image nor rewrites its status, and writes the status Crossplane reads:
// the gRPC endpoint (status.endpoint) and the capability a Composition's
// pipeline needs (status.capabilities).
func (e *Env) createFunctionRevision(ctx context.Context, endpoint string) error {
	rev := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "pkg.crossplane.io/v1",
		"kind":       "FunctionRevision",
		"metadata": map[string]any{
			"name":        FunctionPatchAndTransform + "-local",
			"labels":      map[string]any{"pkg.crossplane.io/package": FunctionPatchAndTransform},
			"annotations": map[string]any{"crossplane.io/paused": "true"},
		},
		"spec": map[string]any{
			"image":        "xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform:v0.5.0",
			"desiredState": "Active",
			"revision":     int64(1),
		},
	}}
	if err := e.Client.Create(ctx, rev); err != nil {
		return fmt.Errorf("creating FunctionRevision %s: %w", rev.GetName(), err)
	}
	status := fmt.Sprintf(`{"status":{"endpoint":%q,"capabilities":["composition"],"conditions":[{"type":"Healthy","status":"True","reason":"HealthyPackageRevision","lastTransitionTime":%q}]}}`,
		endpoint, time.Now().UTC().Format(time.RFC3339))
	if err := e.Client.Status().Patch(ctx, rev, client.RawPatch(types.MergePatchType, []byte(status))); err != nil {
		return fmt.Errorf("writing FunctionRevision %s's status: %w", rev.GetName(), err)
	}
	return nil
}
