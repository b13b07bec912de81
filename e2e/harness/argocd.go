package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ArgoCDNamespace is the namespace Argo CD runs in: its application
// controller's service account, its settings and its Applications.
const ArgoCDNamespace = "argocd"

// ArgoCDController is the application controller's service account, the
// identity every sync writes as.
const ArgoCDController = "argocd-application-controller"

// ArgoCDRelease is the Argo CD release whose controller ArgoCDBinary is
// and whose CRDs every environment installs (e2e/upstream/argocd).
const ArgoCDRelease = "3.6"

// ArgoCDSyncTimeout bounds the wait for a refresh and the sync it leads
// to.
const ArgoCDSyncTimeout = 2 * time.Minute

// ArgoCD is Argo CD's application controller and repo server, and the
// Redis they cache in, running as local processes against the Env's API
// server. The controller reaches the cluster it syncs to through a
// cluster Secret naming the API server's own address (Server), with its
// service account's token: the in-cluster address kubernetes.default.svc
// only resolves in a pod.
type ArgoCD struct {
	// Server is the destination server Applications name.
	Server string
	env    *Env
	procs  *processes
}

// ArgoCDBinary returns Argo CD's multi-call binary, from the ARGOCD
// variable the Makefile exports (make argocd builds it).
func ArgoCDBinary() (string, error) {
	path := os.Getenv("ARGOCD")
	if path == "" {
		return "", fmt.Errorf("ARGOCD is not set: run through make, which builds Argo CD (make argocd)")
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("ARGOCD: %w: run make argocd", err)
	}
	return path, nil
}

// StartArgoCD starts Redis (Debian's redis-server, which .ci/run
// installs), Argo CD's repo server and its application controller, with
// the settings an install has (argocd-cm with annotation tracking,
// argocd-secret, the default AppProject) and the cluster Secret of the
// Env's API server; settings are added to argocd-cm (sync impersonation,
// say). It returns once each is ready; they are stopped when lt ends,
// after which Applications with Argo CD's finalizers would stay: delete
// them before.
func (e *Env) StartArgoCD(ctx context.Context, lt Lifetime, settings map[string]string) (*ArgoCD, error) {
	binary, err := ArgoCDBinary()
	if err != nil {
		return nil, err
	}
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server is not installed (Debian's redis-server package; .ci/run installs it): %w", err)
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ArgoCDNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", ArgoCDNamespace, err)
	}
	procs, err := e.newProcesses(lt, "argocd-")
	if err != nil {
		return nil, err
	}
	a := &ArgoCD{Server: e.Config.Host, env: e, procs: procs}
	kubeconfig, err := e.writeServiceAccountKubeconfig(ctx, procs.dir, ArgoCDNamespace, ArgoCDController)
	if err != nil {
		return nil, err
	}
	token, err := e.serviceAccountToken(ctx, ArgoCDNamespace, ArgoCDController)
	if err != nil {
		return nil, err
	}
	if err := a.writeSettings(ctx, token, settings); err != nil {
		return nil, err
	}
	ports := make([]int, 5)
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	redisAddr, repoAddr := "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1])
	if err := procs.start(ctx, processSpec{
		name: "redis-server", binary: redis,
		args:      []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(ports[0]), "--save", "", "--appendonly", "no"},
		readyAddr: redisAddr,
	}); err != nil {
		return nil, err
	}
	// The repo server keeps its Git, GPG, SSH and TLS state and its
	// clones (under the temporary directory) in its home, not /app/config
	// and /tmp; its askpass socket too, so that two environments on one
	// machine share nothing.
	home := filepath.Join(procs.dir, "argocd-repo-server")
	if err := procs.start(ctx, processSpec{
		name: "argocd-repo-server", binary: binary,
		args: []string{"--address", "127.0.0.1", "--port", strconv.Itoa(ports[1]), "--metrics-address", "127.0.0.1", "--metrics-port", strconv.Itoa(ports[2]),
			"--redis", redisAddr, "--logformat", "json",
			// A commit is seen at the next resync, not three minutes on.
			"--revision-cache-expiration", "1s"},
		// Argo CD's image installs git-verify-wrapper.sh on the PATH, as
		// make argocd installs it beside the binary.
		env: []string{"KUBECONFIG=" + kubeconfig, "ARGOCD_GPG_ENABLED=false", "PATH=" + filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH"),
			"ARGOCD_GNUPGHOME=" + filepath.Join(home, "gpg"), "ARGOCD_SSH_DATA_PATH=" + filepath.Join(home, "ssh"),
			"ARGOCD_TLS_DATA_PATH=" + filepath.Join(home, "tls"), "ARGOCD_ASK_PASS_SOCK=" + filepath.Join(home, "askpass.sock"),
			"TMPDIR=" + home},
		readyURL: "http://127.0.0.1:" + strconv.Itoa(ports[2]) + "/metrics",
	}); err != nil {
		return nil, err
	}
	// Self-heal without its default wait or its backoff between repeated
	// heals of one revision (a test heals many edits in a row), and a
	// resync every 10 s: a test's refresh is what starts a reconcile, the
	// resync a backstop.
	if err := procs.start(ctx, processSpec{
		name: "argocd-application-controller", binary: binary,
		args: []string{"--namespace", ArgoCDNamespace, "--repo-server", repoAddr, "--redis", redisAddr,
			"--metrics-port", strconv.Itoa(ports[3]), "--status-processors", "2", "--operation-processors", "2",
			"--app-resync", "10", "--self-heal-timeout-seconds", "0", "--self-heal-backoff-timeout-seconds", "0", "--logformat", "json"},
		env:      []string{"KUBECONFIG=" + kubeconfig},
		readyURL: "http://127.0.0.1:" + strconv.Itoa(ports[3]) + "/healthz",
	}); err != nil {
		return nil, err
	}
	return a, nil
}

// writeSettings writes what Argo CD's install ships and the controller
// reads: argocd-cm (annotation tracking, Argo CD 3's default, said
// explicitly, and settings), argocd-secret, the default AppProject (any
// source, destination and kind), and the cluster Secret of the Env's API
// server with the controller's token. Each replaces what an earlier
// start left.
func (a *ArgoCD) writeSettings(ctx context.Context, token string, settings map[string]string) error {
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	clusterConfig, err := json.Marshal(map[string]any{
		"bearerToken":     token,
		"tlsClientConfig": map[string]any{"caData": a.env.Config.CAData},
	})
	if err != nil {
		return err
	}
	cm := map[string]string{"application.resourceTrackingMethod": "annotation", "timeout.reconciliation": "10s"}
	for k, v := range settings {
		cm[k] = v
	}
	objs := []client.Object{
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm", Namespace: ArgoCDNamespace, Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}},
			Data:       cm,
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "argocd-secret", Namespace: ArgoCDNamespace, Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}},
			StringData: map[string]string{"server.secretkey": hex.EncodeToString(key)},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-e2e", Namespace: ArgoCDNamespace, Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
			StringData: map[string]string{"name": "e2e", "server": a.Server, "config": string(clusterConfig)},
		},
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
			"metadata": map[string]any{"name": "default", "namespace": ArgoCDNamespace},
			"spec": map[string]any{
				"sourceRepos":              []any{"*"},
				"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
				"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
			},
		}},
	}
	for _, obj := range objs {
		if err := a.env.replace(ctx, obj); err != nil {
			return fmt.Errorf("writing Argo CD's %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// replace creates obj, or replaces the object of its name.
func (e *Env) replace(ctx context.Context, obj client.Object) error {
	err := e.Client.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return err
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		return err
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	return e.Client.Update(ctx, obj)
}

// Log returns everything program (e.g. "argocd-application-controller")
// has written so far.
func (a *ArgoCD) Log(program string) string { return a.procs.log(program) }

// refreshAnnotation asks the application controller to compare an
// Application with Git again now (what `argocd app get --refresh`
// writes); "hard" also regenerates its manifests.
const refreshAnnotation = "argocd.argoproj.io/refresh"

// Refresh asks Argo CD to reconcile the Application app (in
// ArgoCDNamespace) at once, with a hard refresh, and waits until its
// controller has compared it again (the annotation is gone and
// status.reconciledAt moved on) and, when that found it out of sync
// under self-heal, synced it. It returns the Application as that left
// it.
func (a *ArgoCD) Refresh(ctx context.Context, app string) (*unstructured.Unstructured, error) {
	before, err := a.application(ctx, app)
	if err != nil {
		return nil, err
	}
	reconciled, _, _ := unstructured.NestedString(before.Object, "status", "reconciledAt")
	if err := a.RequestRefresh(ctx, app); err != nil {
		return nil, err
	}
	// reconciledAt has a resolution of a second: a reconcile within the
	// same second as the last is told by the annotation's removal.
	time.Sleep(1100 * time.Millisecond)
	var cur *unstructured.Unstructured
	err = Poll(ctx, ArgoCDSyncTimeout, func() error {
		if cur, err = a.application(ctx, app); err != nil {
			return err
		}
		if _, pending := cur.GetAnnotations()[refreshAnnotation]; pending {
			return fmt.Errorf("the Application %s: the refresh is not handled yet", app)
		}
		if now, _, _ := unstructured.NestedString(cur.Object, "status", "reconciledAt"); now == reconciled {
			return fmt.Errorf("the Application %s: status.reconciledAt is still %s", app, now)
		}
		return Synced(cur)
	})
	return cur, err
}

// RequestRefresh asks Argo CD to compare the Application app with Git
// again now, with a hard refresh, and returns without waiting.
func (a *ArgoCD) RequestRefresh(ctx context.Context, app string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"hard"}}}`, refreshAnnotation)
	if err := a.env.Client.Patch(ctx, ArgoCDApplication(app, nil), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("requesting a refresh of Application %s: %w", app, err)
	}
	return nil
}

// WaitSynced waits until the Application app is Synced to Git's newest
// commit and no operation runs.
func (a *ArgoCD) WaitSynced(ctx context.Context, app string, timeout time.Duration) (*unstructured.Unstructured, error) {
	var cur *unstructured.Unstructured
	err := Poll(ctx, timeout, func() error {
		var err error
		if cur, err = a.application(ctx, app); err != nil {
			return err
		}
		return Synced(cur)
	})
	return cur, err
}

// Synced says why the Application app is not Synced with no operation
// running, or nil.
func Synced(app *unstructured.Unstructured) error {
	status, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
	phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
	if _, running := app.Object["operation"]; running || phase == "Running" || status != "Synced" {
		msg, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "message")
		conditions, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
		return fmt.Errorf("the Application %s: sync %q, operation %q (%s); conditions %v; out of sync: %s", app.GetName(), status, phase, strings.TrimSpace(msg), conditions, outOfSync(app))
	}
	return nil
}

// outOfSync lists the Application's resources that are not Synced.
func outOfSync(app *unstructured.Unstructured) string {
	resources, _, _ := unstructured.NestedSlice(app.Object, "status", "resources")
	var out []string
	for _, r := range resources {
		m, _ := r.(map[string]any)
		if m["status"] != "Synced" {
			out = append(out, fmt.Sprintf("%v %v/%v (%v, requiresPruning %v)", m["kind"], m["namespace"], m["name"], m["status"], m["requiresPruning"]))
		}
	}
	return strings.Join(out, ", ")
}

func (a *ArgoCD) application(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	u := ArgoCDApplication(name, nil)
	if err := a.env.Client.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
		return nil, fmt.Errorf("reading Application %s: %w", name, err)
	}
	return u, nil
}

// ArgoCDApplication is the Application name in ArgoCDNamespace with spec.
func ArgoCDApplication(name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": ArgoCDNamespace},
	}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}
