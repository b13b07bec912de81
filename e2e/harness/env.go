package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// StewardNamespace is the namespace Steward runs in (--namespace). Start
// creates it; the rendered webhook configurations exclude it.
const StewardNamespace = "steward-system"

// AuthenticatedAdminBinding is the ClusterRoleBinding that makes every
// authenticated user a cluster-admin, so that only Steward refuses requests.
const AuthenticatedAdminBinding = "steward-e2e:authenticated-cluster-admin"

// Scheme holds client-go's types and CustomResourceDefinitions; clients made
// by the harness use it. Custom resources are handled as unstructured objects.
var Scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// Options change how Start runs the environment.
type Options struct {
	// CRDDir is the directory of CRDs and objects to install; e2e/crds when
	// empty. The upstream CRDs of UpstreamCRDDirs are installed regardless.
	CRDDir string
	// OnSignal, when set, is called after SIGINT or SIGTERM has stopped
	// everything, instead of exiting with status 1. The sandbox uses it to
	// finish quietly.
	OnSignal func(os.Signal)
	// APIServerFlags are set on kube-apiserver's command line on top of
	// the harness's own (e.g. admission-control-config-file).
	APIServerFlags map[string]string
	// SurviveParent keeps the environment up when the process that started
	// this one exits. By default the process gets SIGTERM then (and stops
	// everything), so a killed `go test` leaves nothing behind; the sandbox
	// sets it because a shell may start it in the background and exit.
	SurviveParent bool
	// Session, when set, holds the parts started for the environment's
	// whole life outside tests (the sandbox's Flux): Stop ends it first,
	// while the API server still runs, also when a signal stops the
	// environment.
	Session *Session
	// ControllerManager runs kube-controller-manager's garbage collector,
	// namespace, deployment and replicaset controllers against the API
	// server, each as its own service account, from the end of start-up
	// until Stop, so that Foreground deletion, ownerReference cascades and
	// namespace deletion are Kubernetes' own. Off by default: without it,
	// deletions wait on finalizers nobody removes unless a test does.
	ControllerManager bool
}

// Env is a running API server with the sample CRDs, and the Steward serving
// its webhooks (once StartSteward is called).
type Env struct {
	// Config reaches the API server as an admin (system:masters).
	Config *rest.Config
	// Client is an admin client using Scheme.
	Client client.Client
	// Kubeconfig is the path of an admin kubeconfig file.
	Kubeconfig string
	// AuditLog is the path of the API server's audit log (JSON lines); see
	// AuditEvents.
	AuditLog string
	// Steward is the running Steward, nil before StartSteward. RestartSteward
	// replaces it.
	Steward *Steward
	// ControllerManager is the running kube-controller-manager, nil unless
	// Options.ControllerManager.
	ControllerManager *ControllerManager

	testEnv  *envtest.Environment
	dir      string
	mark     string
	opts     Options
	watchdog *watchdog
	probe    *probeServer
	stopOnce sync.Once
	stopSig  func()
	// controllers is what Options.ControllerManager started, ended by Stop
	// before Steward and the API server.
	controllers *Session

	binaryAcquired bool
	stewards       int
	// metricsToken is MetricsScraper's bearer token.
	metricsToken string
	// mu guards starting, the Steward that StartStewardWith has launched
	// but not yet returned, so that a signal during start-up stops it too.
	mu       sync.Mutex
	starting *Steward
	// replicas are the sets StartReplicas started.
	replicas []*Replicas
	// started is set once StartWith has succeeded.
	started atomic.Bool
}

// Start starts etcd and kube-apiserver, installs the upstream and sample
// CRDs and the sample objects, creates Steward's namespace and the RBAC that
// lets every user through to Steward, and writes an admin kubeconfig. ctx
// bounds the start-up only.
func Start(ctx context.Context) (*Env, error) {
	return StartWith(ctx, Options{})
}

// StartWith is Start with options.
func StartWith(ctx context.Context, opts Options) (env *Env, err error) {
	// envtest logs through controller-runtime's logger; Steward's own log
	// is the one worth reading, so the harness's in-process log is dropped.
	ctrllog.SetLogger(logr.Discard())
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	if opts.CRDDir == "" {
		if opts.CRDDir, err = CRDDir(); err != nil {
			return nil, err
		}
	}
	upstream, err := UpstreamCRDDirs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "steward-e2e-")
	if err != nil {
		return nil, fmt.Errorf("creating the work directory: %w", err)
	}
	e := &Env{dir: dir, opts: opts, AuditLog: filepath.Join(dir, "audit.log")}
	// Signals are handled from here on: an interrupt during start-up must
	// not leave etcd and kube-apiserver behind either.
	e.stopSig = e.handleSignals()
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if !opts.SurviveParent {
		if err := dieWithParent(); err != nil {
			return nil, err
		}
	}
	binDir, err := acquireBinary()
	if err != nil {
		return nil, err
	}
	e.binaryAcquired = true

	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, fmt.Errorf("writing the audit policy: %w", err)
	}
	// Every process the Env starts has e.mark in its command line: etcd's
	// data directory, the API server's audit log and Steward's kubeconfig
	// are inside the work directory. The watchdog finds them by it.
	e.mark = dir + string(filepath.Separator)
	if e.watchdog, err = startWatchdog(e.mark, dir, binDir); err != nil {
		return nil, err
	}
	e.testEnv = &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        append([]string{opts.CRDDir}, upstream...),
		ErrorIfCRDPathMissing:    true,
		Scheme:                   Scheme,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	// etcd's data and the API server's certificates live in the work
	// directory too, so that removing it (or the watchdog) leaves nothing.
	// The binaries' paths are explicit, so that envtest's own lookup (which
	// prefers $KUBEBUILDER_ASSETS even when it is empty) cannot pick others.
	e.testEnv.ControlPlane.Etcd = &envtest.Etcd{
		Path:    filepath.Join(assets, "etcd"),
		DataDir: filepath.Join(dir, "etcd"),
	}
	e.testEnv.ControlPlane.APIServer = &envtest.APIServer{
		Path:    filepath.Join(assets, "kube-apiserver"),
		CertDir: filepath.Join(dir, "apiserver"),
	}
	for _, d := range []string{e.testEnv.ControlPlane.Etcd.DataDir, e.testEnv.ControlPlane.APIServer.CertDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	apiServer := e.testEnv.ControlPlane.APIServer.Configure()
	apiServer.Set("audit-policy-file", policy)
	apiServer.Set("audit-log-path", e.AuditLog)
	apiServer.Set("audit-log-format", "json")
	apiServer.Set("audit-log-mode", "blocking")
	for name, value := range opts.APIServerFlags {
		apiServer.Set(name, value)
	}
	// Start and Stop of envtest do not take a context; start-up is bounded by
	// ControlPlaneStartTimeout instead.
	cfg, err := e.testEnv.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}

	admin, err := e.testEnv.AddUser(envtest.User{Name: "steward-e2e-admin", Groups: []string{"system:masters"}}, &rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		return nil, fmt.Errorf("provisioning the admin user: %w", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("rendering the admin kubeconfig: %w", err)
	}
	e.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing the admin kubeconfig: %w", err)
	}
	e.Config = cfg
	if e.Client, err = client.New(cfg, client.Options{Scheme: Scheme}); err != nil {
		return nil, fmt.Errorf("creating the admin client: %w", err)
	}
	if err := applyObjects(ctx, e.Client, opts.CRDDir); err != nil {
		return nil, err
	}
	if err := e.setupCluster(ctx); err != nil {
		return nil, err
	}
	if e.probe, err = startProbeServer(); err != nil {
		return nil, err
	}
	if opts.ControllerManager {
		// After the CRDs and sample objects: the garbage collector finds
		// their kinds in its first discovery rather than its next resync.
		e.controllers = &Session{Log: os.Stderr}
		if e.ControllerManager, err = e.startControllerManager(ctx, e.controllers); err != nil {
			return nil, err
		}
	}
	e.started.Store(true)
	return e, nil
}

// setupCluster creates Steward's namespace and lets every authenticated user
// do anything RBAC would check, so that Steward alone decides.
func (e *Env) setupCluster(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: StewardNamespace}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return fmt.Errorf("creating namespace %s: %w", StewardNamespace, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: AuthenticatedAdminBinding},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}},
	}
	if err := e.Client.Create(ctx, binding); err != nil {
		return fmt.Errorf("creating ClusterRoleBinding %s: %w", AuthenticatedAdminBinding, err)
	}
	token, err := e.serviceAccountToken(ctx, StewardNamespace, MetricsScraper)
	if err != nil {
		return err
	}
	e.metricsToken = token
	return nil
}

// MetricsScraper is the service account the harness reads Steward's
// metrics as, the way Prometheus does: with its token, which Steward has
// the API server review. (Every authenticated user may read them here.)
const MetricsScraper = "metrics-scraper"

// serviceAccountToken creates a service account, unless it exists, and a
// day-long token of it.
func (e *Env) serviceAccountToken(ctx context.Context, namespace, name string) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if err := e.Client.Create(ctx, sa); client.IgnoreAlreadyExists(err) != nil {
		return "", fmt.Errorf("creating service account %s/%s: %w", namespace, name, err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(24 * 3600))}}
	if err := e.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("requesting a token of %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// As returns a client that impersonates user with groups. The API server
// adds system:authenticated (and, for service accounts named
// system:serviceaccount:<ns>:<name>, their groups when none are given).
func (e *Env) As(user string, groups ...string) (client.Client, error) {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", user, err)
	}
	return c, nil
}

// Dir is the Env's work directory, removed by Stop.
func (e *Env) Dir() string { return e.dir }

// Stop ends Options.Session, stops kube-controller-manager, Steward,
// kube-apiserver and etcd, and removes the work directory. It is safe to
// call more than once and from several goroutines.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		if e.opts.Session != nil {
			e.opts.Session.End()
		}
		if e.controllers != nil {
			e.controllers.End()
		}
		var errs []error
		e.mu.Lock()
		running, starting, replicas := e.Steward, e.starting, e.replicas
		e.mu.Unlock()
		for _, s := range []*Steward{running, starting} {
			if s != nil {
				if err := s.Stop(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		for _, r := range replicas {
			if err := r.Stop(); err != nil {
				errs = append(errs, err)
			}
		}
		if e.probe != nil {
			e.probe.close()
		}
		if e.testEnv != nil {
			// The watchdog stays armed while envtest stops its processes: if
			// this process dies meanwhile (a second signal, SIGKILL), the
			// watchdog still ends them.
			if err := e.testEnv.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("stopping kube-apiserver and etcd: %w", err))
				e.watchdog.killAll()
			}
			e.watchdog.disarm()
		}
		if err := os.RemoveAll(e.dir); err != nil {
			errs = append(errs, err)
		}
		if e.binaryAcquired {
			releaseBinary()
		}
		if e.stopSig != nil {
			e.stopSig()
		}
		if err := errors.Join(errs...); err != nil {
			fmt.Fprintf(os.Stderr, "harness: stopping: %v\n", err)
		}
	})
}
