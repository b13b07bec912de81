package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stewardhq/steward/e2e/harness"
)

// cluster is the environment under load: the harness's API server and
// etcd, the Steward it runs, and clients for the identities the workloads
// write as.
type cluster struct {
	env     *harness.Env
	base    *rest.Config
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	apiPID  int
	etcdPID int
	// pprofAddr is Steward's pprof endpoint (host:port).
	pprofAddr string
	// slow are admin clients without the usual request timeout, for
	// cleanup.
	slow *clients
	// warnings counts the warning headers the API server returned.
	warnings atomic.Int64

	mu      sync.Mutex
	clients map[string]*clients
}

// clients reach the API server as one identity: typed (protobuf, as
// controllers talk) and dynamic (JSON, the only encoding custom resources
// have).
type clients struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

// countWarnings counts warning headers instead of printing one line per
// request, as client-go would by default.
type countWarnings struct{ n *atomic.Int64 }

func (w countWarnings) HandleWarningHeader(int, string, string) { w.n.Add(1) }

// startCluster starts the API server and etcd and Steward, with every rule
// at its defaults and pprof on a local port.
func startCluster(ctx context.Context, stewardConfig string) (*cluster, error) {
	env, err := harness.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting the API server: %w", err)
	}
	c := &cluster{env: env, clients: map[string]*clients{}}
	fail := func(err error) (*cluster, error) {
		env.Stop()
		return nil, err
	}
	c.base = rest.CopyConfig(env.Config)
	// Closed-loop writers must not be throttled by the client: the server
	// is what is measured.
	c.base.QPS = -1
	c.base.Burst = 0
	c.base.Timeout = 60 * time.Second
	c.base.WarningHandler = countWarnings{&c.warnings}
	admin := c.as("")
	c.kube, c.dyn = admin.kube, admin.dyn
	// Cleanup deletes thousands of objects in one request; it may take
	// minutes on a busy machine.
	long := rest.CopyConfig(c.base)
	long.Timeout = 15 * time.Minute
	c.slow = &clients{kube: kubernetes.NewForConfigOrDie(long), dyn: dynamic.NewForConfigOrDie(long)}

	apis := childrenNamed(os.Getpid(), "kube-apiserver")
	etcds := childrenNamed(os.Getpid(), "etcd")
	if len(apis) != 1 || len(etcds) != 1 {
		return fail(fmt.Errorf("expected one kube-apiserver and one etcd child process, found %v and %v", apis, etcds))
	}
	c.apiPID, c.etcdPID = apis[0], etcds[0]

	port, err := harness.FreePort()
	if err != nil {
		return fail(err)
	}
	c.pprofAddr = "127.0.0.1:" + strconv.Itoa(port)
	if _, err := env.StartSteward(ctx, stewardConfig, "--pprof-bind-address", c.pprofAddr); err != nil {
		return fail(fmt.Errorf("starting steward: %w", err))
	}
	return c, nil
}

// stop ends Steward, the API server and etcd.
func (c *cluster) stop() { c.env.Stop() }

// steward is the running Steward process.
func (c *cluster) steward() *harness.Steward { return c.env.Steward }

// as returns clients for user with groups; "" is the admin.
func (c *cluster) as(user string, groups ...string) *clients {
	key := fmt.Sprint(user, groups)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[key]; ok {
		return cl
	}
	cfg := rest.CopyConfig(c.base)
	if user != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	proto := rest.CopyConfig(cfg)
	proto.ContentType = "application/vnd.kubernetes.protobuf"
	proto.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cl := &clients{kube: kubernetes.NewForConfigOrDie(proto), dyn: dyn}
	c.clients[key] = cl
	return cl
}

// ensureNamespace creates a namespace unless it exists.
func (c *cluster) ensureNamespace(ctx context.Context, name string) error {
	_, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// stewardWebhooks are Steward's webhook configurations as the API server
// holds them once Steward runs: the rendered manifests plus whatever rules
// Steward fills in at run time (claimguard's claim and composite kinds).
type stewardWebhooks struct {
	validating *admissionregistrationv1.ValidatingWebhookConfiguration
	mutating   *admissionregistrationv1.MutatingWebhookConfiguration
}

// snapshotWebhooks waits until no entry of Steward's configurations is
// missing its rules (those Steward fills in at run time), then copies them
// so they can be removed and restored between configurations.
func (c *cluster) snapshotWebhooks(ctx context.Context, timeout time.Duration) (stewardWebhooks, error) {
	deadline := time.Now().Add(timeout)
	for {
		var w stewardWebhooks
		var empty []string
		vwc, err := c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, harness.WebhookConfigurationName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return w, err
		default:
			w.validating = cleanMeta(vwc).(*admissionregistrationv1.ValidatingWebhookConfiguration)
			for _, wh := range vwc.Webhooks {
				if len(wh.Rules) == 0 {
					empty = append(empty, wh.Name)
				}
			}
		}
		mwc, err := c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, harness.WebhookConfigurationName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return w, err
		default:
			w.mutating = cleanMeta(mwc).(*admissionregistrationv1.MutatingWebhookConfiguration)
			for _, wh := range mwc.Webhooks {
				if len(wh.Rules) == 0 {
					empty = append(empty, wh.Name)
				}
			}
		}
		if w.validating == nil && w.mutating == nil {
			return w, errors.New("steward registered no webhook configuration")
		}
		if len(empty) == 0 {
			return w, nil
		}
		if time.Now().After(deadline) {
			logf("warning: webhooks %v still have no rules after %s; measuring without them", empty, timeout)
			return w, nil
		}
		select {
		case <-ctx.Done():
			return w, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// cleanMeta strips what the API server sets, so the object can be created
// again.
func cleanMeta(obj interface {
	metav1.Object
}) metav1.Object {
	obj.SetResourceVersion("")
	obj.SetUID("")
	obj.SetManagedFields(nil)
	obj.SetCreationTimestamp(metav1.Time{})
	obj.SetGeneration(0)
	return obj
}

// logf prints a progress line to stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}
