package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// FluxNamespace is the namespace Flux's controllers run in: their service
// accounts, and the RUNTIME_NAMESPACE they are told they run in.
const FluxNamespace = "flux-system"

// FluxRelease is the Flux release whose CRDs (e2e/upstream/flux/<release>)
// StartFlux installs: the one the controllers the Makefile builds belong
// to.
const FluxRelease = "2.9"

// fluxReleaseControllers are the controllers of other releases than
// FluxRelease the Makefile builds, by release and controller, each with the
// environment variable it exports the binary's path in.
var fluxReleaseControllers = map[string]map[string]string{
	"2.7": {"helm-controller": "HELM_CONTROLLER_2_7"},
}

// FluxOptions say which controllers StartFlux runs.
type FluxOptions struct {
	// HelmControllerRelease is the Flux release whose helm-controller
	// runs, with that release's HelmRelease CRD, beside FluxRelease's
	// source- and kustomize-controller: FluxRelease when empty. "2.7" runs
	// Flux 2.7's, the last whose CRD serves helm.toolkit.fluxcd.io/v2beta2.
	HelmControllerRelease string
}

// release is the Flux release of controller's binary and CRDs.
func (o FluxOptions) release(controller string) string {
	if controller == "helm-controller" && o.HelmControllerRelease != "" {
		return o.HelmControllerRelease
	}
	return FluxRelease
}

// binaryVar is the environment variable that holds the path of
// controller's binary of release.
func binaryVar(controller, release, defaultVar string) (string, error) {
	if release == FluxRelease {
		return defaultVar, nil
	}
	if v := fluxReleaseControllers[release][controller]; v != "" {
		return v, nil
	}
	return "", fmt.Errorf("the Makefile builds no %s of Flux %s", controller, release)
}

// FluxReconcileTimeout bounds the wait for a reconcile ForceReconcile
// asked for.
const FluxReconcileTimeout = 2 * time.Minute

// fluxControllers are the controllers StartFlux runs, in start order
// (source-controller first: the others fetch its artifacts), each with the
// environment variable the Makefile exports its binary's path in and the
// prefix of the CRDs it reconciles.
var fluxControllers = []struct{ name, binaryVar, crds string }{
	{"source-controller", "SOURCE_CONTROLLER", "source.toolkit.fluxcd.io_"},
	{"kustomize-controller", "KUSTOMIZE_CONTROLLER", "kustomize.toolkit.fluxcd.io_"},
	{"helm-controller", "HELM_CONTROLLER", "helm.toolkit.fluxcd.io_"},
}

// FluxControllerUser is the user the API server sees a controller as:
// its service account in FluxNamespace.
func FluxControllerUser(controller string) string {
	return "system:serviceaccount:" + FluxNamespace + ":" + controller
}

// FluxBinaryVars returns, by controller, the environment variable the
// Makefile exports the path of the binary o chooses in.
func FluxBinaryVars(o FluxOptions) (map[string]string, error) {
	out := map[string]string{}
	for _, c := range fluxControllers {
		v, err := binaryVar(c.name, o.release(c.name), c.binaryVar)
		if err != nil {
			return nil, err
		}
		out[c.name] = v
	}
	return out, nil
}

// FluxBinaries returns the binary of each controller o chooses, from the
// environment variables the Makefile exports (make flux-controllers builds
// them). It fails naming the first variable that is not set.
func FluxBinaries(o FluxOptions) (map[string]string, error) {
	vars, err := FluxBinaryVars(o)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, c := range fluxControllers {
		v := vars[c.name]
		path := os.Getenv(v)
		if path == "" {
			return nil, fmt.Errorf("%s is not set: run through make, which builds Flux's controllers (make flux-controllers)", v)
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%s: %w: run make flux-controllers", v, err)
		}
		out[c.name] = path
	}
	return out, nil
}

// Flux is Flux's source-, kustomize- and helm-controller running as local
// processes against the Env's API server, each as its own service account.
type Flux struct {
	// StorageAddr is source-controller's artifact server (host:port on
	// 127.0.0.1), the address its artifacts' URLs name.
	StorageAddr string
	env         *Env
	procs       *processes
}

// StartFlux installs the CRDs of the source, kustomize and helm controllers
// o chooses (FluxRelease's by default), creates FluxNamespace and the controllers' service accounts
// bound to cluster-admin (as Flux's install does), and starts each
// controller with a kubeconfig holding its service account's token, on
// free loopback ports, leader election off, watching every namespace. It
// returns once each answers /readyz. The controllers are stopped when t
// ends, and their logs are written to t's log if it failed.
//
// The CRDs are left installed: a test sharing its Env restores the ones
// it expects. Objects with the controllers' finalizers must be deleted
// before t ends, while the controllers still run to remove them.
func (e *Env) StartFlux(ctx context.Context, t Lifetime, o FluxOptions) (*Flux, error) {
	binaries, err := FluxBinaries(o)
	if err != nil {
		return nil, err
	}
	if err := e.installFluxCRDs(o); err != nil {
		return nil, err
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: FluxNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", FluxNamespace, err)
	}
	procs, err := e.newProcesses(t, "flux-")
	if err != nil {
		return nil, err
	}
	storagePort, err := FreePort()
	if err != nil {
		return nil, err
	}
	f := &Flux{StorageAddr: "127.0.0.1:" + strconv.Itoa(storagePort), env: e, procs: procs}
	for _, c := range fluxControllers {
		kubeconfig, err := e.writeServiceAccountKubeconfig(ctx, procs.dir, FluxNamespace, c.name)
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
		args := []string{
			"--metrics-addr=127.0.0.1:" + strconv.Itoa(metricsPort),
			"--health-addr=127.0.0.1:" + strconv.Itoa(healthPort),
			"--enable-leader-election=false",
			"--watch-all-namespaces=true",
			"--log-encoding=json",
		}
		if c.name == "source-controller" {
			storage := filepath.Join(procs.dir, "storage")
			if err := os.Mkdir(storage, 0o700); err != nil {
				return nil, err
			}
			args = append(args, "--storage-path="+storage, "--storage-addr="+f.StorageAddr, "--storage-adv-addr="+f.StorageAddr)
		}
		// The controllers take their kubeconfig from $KUBECONFIG, not a
		// flag.
		if err := procs.start(ctx, processSpec{
			name: c.name, binary: binaries[c.name], args: args,
			env:      []string{"KUBECONFIG=" + kubeconfig, "RUNTIME_NAMESPACE=" + FluxNamespace},
			readyURL: "http://127.0.0.1:" + strconv.Itoa(healthPort) + "/readyz",
		}); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// installFluxCRDs installs or replaces (as the release's install.yaml
// does) the CRDs of the controllers StartFlux runs, each from its
// release, and waits until they are served.
func (e *Env) installFluxCRDs(o FluxOptions) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	var paths []string
	for _, c := range fluxControllers {
		release := o.release(c.name)
		files, err := filepath.Glob(filepath.Join(root, "e2e", "upstream", "flux", release, c.crds+"*.yaml"))
		if err != nil || len(files) == 0 {
			return fmt.Errorf("no %s* CRDs vendored for Flux %s: %v", c.crds, release, err)
		}
		paths = append(paths, files...)
	}
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing Flux's CRDs: %w", err)
	}
	return nil
}

// writeServiceAccountKubeconfig creates the service account name in
// namespace, binds it to cluster-admin, and writes a kubeconfig into dir
// that reaches the API server with a day-long token of it.
func (e *Env) writeServiceAccountKubeconfig(ctx context.Context, dir, namespace, name string) (string, error) {
	token, err := e.adminToken(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	// The admin kubeconfig's cluster (server and CA), with the token as
	// the only credentials.
	cfg, err := clientcmd.LoadFromFile(e.Kubeconfig)
	if err != nil {
		return "", fmt.Errorf("reading the admin kubeconfig: %w", err)
	}
	current, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return "", fmt.Errorf("the admin kubeconfig has no context %q", cfg.CurrentContext)
	}
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{name: {Token: token}}
	cfg.Contexts = map[string]*clientcmdapi.Context{name: {Cluster: current.Cluster, AuthInfo: name}}
	cfg.CurrentContext = name
	path := filepath.Join(dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("writing the kubeconfig of %s: %w", name, err)
	}
	return path, nil
}

// Log returns everything controller (e.g. "kustomize-controller") has
// written so far.
func (f *Flux) Log(controller string) string { return f.procs.log(controller) }

// reconcileRequestAnnotation asks a Flux controller to reconcile an object
// now; the controller copies its value to status.lastHandledReconcileAt
// when it has (what `flux reconcile` writes and waits for).
const reconcileRequestAnnotation = "reconcile.fluxcd.io/requestedAt"

// ForceReconcile asks Flux to reconcile obj (a Kustomization,
// GitRepository, HelmRelease: any Flux kind, by its apiVersion, kind,
// namespace and name) at once, as `flux reconcile` does, and waits until
// its controller has handled the request. It returns the object as that
// reconcile left it; whether it succeeded is in its Ready condition.
func (f *Flux) ForceReconcile(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	requested := time.Now().UTC().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, reconcileRequestAnnotation, requested)
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(obj.GroupVersionKind())
	target.SetNamespace(obj.GetNamespace())
	target.SetName(obj.GetName())
	if err := f.env.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return nil, fmt.Errorf("requesting a reconcile of %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	var cur *unstructured.Unstructured
	err := Poll(ctx, FluxReconcileTimeout, func() error {
		cur = &unstructured.Unstructured{}
		cur.SetGroupVersionKind(obj.GroupVersionKind())
		if err := f.env.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
			return err
		}
		handled, _, _ := unstructured.NestedString(cur.Object, "status", "lastHandledReconcileAt")
		if handled != requested {
			return fmt.Errorf("%s %s/%s: status.lastHandledReconcileAt is %q, not %q; %s", obj.GetKind(), obj.GetNamespace(), obj.GetName(), handled, requested, FluxReady(cur))
		}
		return nil
	})
	return cur, err
}

// FluxReady describes obj's Ready condition ("Ready=True (reason:
// message)"), or says it has none.
func FluxReady(obj *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			return fmt.Sprintf("Ready=%v (%v: %v)", m["status"], m["reason"], m["message"])
		}
	}
	return "no Ready condition"
}

// WaitFluxReady waits until obj's controller reports it Ready for its
// current generation, and returns it as it then is.
func (f *Flux) WaitFluxReady(ctx context.Context, obj *unstructured.Unstructured, timeout time.Duration) (*unstructured.Unstructured, error) {
	var cur *unstructured.Unstructured
	err := Poll(ctx, timeout, func() error {
		cur = &unstructured.Unstructured{}
		cur.SetGroupVersionKind(obj.GroupVersionKind())
		if err := f.env.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
			return err
		}
		observed, _, _ := unstructured.NestedInt64(cur.Object, "status", "observedGeneration")
		if ready := FluxReady(cur); !strings.HasPrefix(ready, "Ready=True ") || observed != cur.GetGeneration() {
			return fmt.Errorf("%s %s/%s (generation %d, observed %d): %s", obj.GetKind(), obj.GetNamespace(), obj.GetName(), cur.GetGeneration(), observed, ready)
		}
		return nil
	})
	return cur, err
}

// adminToken creates the service account name in namespace, binds it to
// cluster-admin (as Flux's and Argo CD's installs bind their controllers),
// and returns a day-long token of it.
func (e *Env) adminToken(ctx context.Context, namespace, name string) (string, error) {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: namespace + ":" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
	}
	if err := e.Client.Create(ctx, binding); client.IgnoreAlreadyExists(err) != nil {
		return "", fmt.Errorf("creating ClusterRoleBinding %s: %w", binding.Name, err)
	}
	return e.serviceAccountToken(ctx, namespace, name)
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "(no log)"
		}
		return fmt.Sprintf("(reading %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
