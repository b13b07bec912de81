package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// FleetRelease is the Fleet release whose CRDs (e2e/upstream/fleet/<release>)
// StartFleet installs: the one whose controller and agent the Makefile
// builds (tools/fleet).
const FleetRelease = "0.12"

// Fleet's namespaces and identities, as its install names them for the
// Fleet cluster itself ("local" in the workspace fleet-local): the
// controller runs in cattle-fleet-system, the local cluster's agent in
// cattle-fleet-local-system, each as its own service account.
const (
	FleetControllerNamespace = "cattle-fleet-system"
	FleetControllerAccount   = "fleet-controller"
	FleetAgentNamespace      = "cattle-fleet-local-system"
	FleetAgentAccount        = "fleet-agent"
	FleetWorkspace           = "fleet-local"
	FleetCluster             = "local"
	// FleetClusterNamespace is the namespace Fleet keeps the local
	// cluster's BundleDeployments in, named as Fleet names it
	// (cluster-<workspace>-<cluster>-<hash>).
	FleetClusterNamespace = "cluster-fleet-local-local-1a3d67d0a899"
)

// fleetAgentAddrs are the addresses Fleet's agent binds whatever it is
// told (its metrics and health probes, on every interface); its pprof
// server's localhost:6060 is not among them, since the agent only logs a
// failure to bind it (the controller, started first, holds it).
var fleetAgentAddrs = []string{":8080", ":8081"}

// fleetElection is the leader election Fleet's controller and agent
// always run (neither can turn it off), short: each start finds the lease
// its predecessor left deleted, and a renewal may still miss a few
// seconds of a loaded machine.
var fleetElection = []string{
	"CATTLE_ELECTION_LEASE_DURATION=15s",
	"CATTLE_ELECTION_RENEW_DEADLINE=10s",
	"CATTLE_ELECTION_RETRY_PERIOD=1s",
}

// FleetUser is the user the API server sees a Fleet process as: its
// service account (FleetControllerAccount in FleetControllerNamespace,
// FleetAgentAccount in FleetAgentNamespace).
func FleetUser(namespace, account string) string {
	return "system:serviceaccount:" + namespace + ":" + account
}

// FleetBinaries returns the paths of Fleet's controller and agent, from
// the FLEET_CONTROLLER and FLEET_AGENT variables the Makefile exports
// (make fleet builds them). It fails naming the first that is not set.
func FleetBinaries() (controller, agent string, err error) {
	paths := make([]string, 2)
	for i, v := range []string{"FLEET_CONTROLLER", "FLEET_AGENT"} {
		paths[i] = os.Getenv(v)
		if paths[i] == "" {
			return "", "", fmt.Errorf("%s is not set: run through make e2e-extended, which builds Fleet's controller and agent (make fleet)", v)
		}
		if _, err := os.Stat(paths[i]); err != nil {
			return "", "", fmt.Errorf("%s: %w: run make fleet", v, err)
		}
	}
	return paths[0], paths[1], nil
}

// Fleet is Fleet's controller and the local cluster's agent running as
// local processes against the Env's API server.
type Fleet struct {
	env   *Env
	procs *processes
}

// StartFleet installs FleetRelease's CRDs and starts Fleet's controller
// and the agent of the cluster FleetCluster in FleetWorkspace, each with a
// kubeconfig holding its service account's token (bound to cluster-admin,
// as Fleet's charts bind them). It returns once each answers /readyz; they
// are stopped (agent first) when lt ends, and their logs written to lt's
// log if it failed.
//
// What Fleet's agentmanagement controller and the agent's registration
// would do is done here instead, as the recipe found it works
// without them: the Cluster exists with its status.namespace
// (FleetClusterNamespace, created), and the agent's registration secret
// (FleetAgentNamespace/fleet-agent: the upstream kubeconfig, scoped to that
// namespace, and the cluster's name and workspace) is there already.
//
// The agent binds :8080 and :8081 on every interface whatever it is told,
// so one Fleet agent runs on a machine at a time: StartFleet fails, saying
// which, when either is taken. The controller is told free loopback ports.
//
// Bundles must be deleted before lt ends, while the controller and the
// agent still run to remove their BundleDeployments and Helm releases.
func (e *Env) StartFleet(ctx context.Context, lt Lifetime) (*Fleet, error) {
	controller, agent, err := FleetBinaries()
	if err != nil {
		return nil, err
	}
	if err := e.installFleetCRDs(); err != nil {
		return nil, err
	}
	for _, ns := range []string{FleetControllerNamespace, FleetAgentNamespace, FleetWorkspace, FleetClusterNamespace} {
		if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			return nil, fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	// A lease an earlier start left would hold each new process back
	// until it expired.
	for _, l := range []client.ObjectKey{
		{Namespace: FleetControllerNamespace, Name: "fleet-controller-leader-election-shard"},
		{Namespace: FleetAgentNamespace, Name: "fleet-agent"},
	} {
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: l.Name}}
		if err := e.Client.Delete(ctx, lease); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("deleting the lease %s: %w", l, err)
		}
	}
	procs, err := e.newProcesses(lt, "fleet-")
	if err != nil {
		return nil, err
	}
	f := &Fleet{env: e, procs: procs}
	if err := f.startController(ctx, controller); err != nil {
		return nil, err
	}
	if err := f.registerLocalCluster(ctx); err != nil {
		return nil, err
	}
	if err := f.startAgent(ctx, agent); err != nil {
		return nil, err
	}
	return f, nil
}

// fleetAgentPortsFree fails, naming the address, when one the agent binds
// is taken: the agent would start without its controllers and never
// report it.
func fleetAgentPortsFree() error {
	for _, addr := range fleetAgentAddrs {
		if err := portFree(addr, "the Fleet agent binds it whatever it is told; Fleet's e2e tests run one agent at a time"); err != nil {
			return err
		}
	}
	return nil
}

// installFleetCRDs installs FleetRelease's CRDs and waits until they are
// served.
func (e *Env) installFleetCRDs() error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	path := filepath.Join(root, "e2e", "upstream", "fleet", FleetRelease, "crds.yaml")
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: []string{path}, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing Fleet %s's CRDs: %w", FleetRelease, err)
	}
	return nil
}

// startController starts Fleet's controller as its service account, its
// metrics and health probes on free loopback ports (it reads them from
// the environment).
func (f *Fleet) startController(ctx context.Context, binary string) error {
	kubeconfig, err := f.env.writeServiceAccountKubeconfig(ctx, f.procs.dir, FleetControllerNamespace, FleetControllerAccount)
	if err != nil {
		return err
	}
	metricsPort, err := FreePort()
	if err != nil {
		return err
	}
	healthPort, err := FreePort()
	if err != nil {
		return err
	}
	return f.procs.start(ctx, processSpec{
		name: "fleetcontroller", binary: binary,
		env: append([]string{
			"KUBECONFIG=" + kubeconfig, "NAMESPACE=" + FleetControllerNamespace,
			"FLEET_METRICS_BIND_ADDRESS=127.0.0.1:" + strconv.Itoa(metricsPort),
			"FLEET_HEALTHPROBE_BIND_ADDRESS=127.0.0.1:" + strconv.Itoa(healthPort),
		}, fleetElection...),
		readyURL: "http://127.0.0.1:" + strconv.Itoa(healthPort) + "/readyz",
	})
}

// registerLocalCluster does what Fleet's agentmanagement controller does
// for the local cluster, which the controller then targets: the Cluster
// with its status.namespace.
func (f *Fleet) registerLocalCluster(ctx context.Context) error {
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": FleetCluster, "namespace": FleetWorkspace, "labels": map[string]any{"name": FleetCluster}},
		"spec":     map[string]any{"agentNamespace": FleetAgentNamespace},
	}}
	if err := f.env.Client.Create(ctx, cluster); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating Cluster %s/%s: %w", FleetWorkspace, FleetCluster, err)
	}
	patch := fmt.Sprintf(`{"status":{"namespace":%q}}`, FleetClusterNamespace)
	if err := f.env.Client.Status().Patch(ctx, cluster, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("writing the status.namespace of Cluster %s/%s: %w", FleetWorkspace, FleetCluster, err)
	}
	return nil
}

// startAgent writes the agent's registration secret and starts the agent
// as its service account, on the ports it always binds (fleetAgentAddrs).
func (f *Fleet) startAgent(ctx context.Context, binary string) error {
	kubeconfig, err := f.env.writeServiceAccountKubeconfig(ctx, f.procs.dir, FleetAgentNamespace, FleetAgentAccount)
	if err != nil {
		return err
	}
	// The upstream kubeconfig registration would have written: the Fleet
	// cluster (the same API server), the agent's credentials, and the
	// namespace of its BundleDeployments, which the agent watches.
	upstream, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return fmt.Errorf("reading the agent's kubeconfig: %w", err)
	}
	current, ok := upstream.Contexts[upstream.CurrentContext]
	if !ok {
		return errors.New("the agent's kubeconfig has no current context")
	}
	current.Namespace = FleetClusterNamespace
	upstreamBytes, err := clientcmd.Write(*upstream)
	if err != nil {
		return fmt.Errorf("writing the agent's upstream kubeconfig: %w", err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet-agent", Namespace: FleetAgentNamespace},
		Data: map[string][]byte{
			"kubeconfig":       upstreamBytes,
			"clusterNamespace": []byte(FleetWorkspace),
			"clusterName":      []byte(FleetCluster),
		},
	}
	if err := f.env.replace(ctx, secret); err != nil {
		return fmt.Errorf("writing the agent's registration secret: %w", err)
	}
	if err := fleetAgentPortsFree(); err != nil {
		return err
	}
	return f.procs.start(ctx, processSpec{
		name: "fleetagent", binary: binary,
		env:      append([]string{"KUBECONFIG=" + kubeconfig, "NAMESPACE=" + FleetAgentNamespace}, fleetElection...),
		readyURL: "http://127.0.0.1" + fleetAgentAddrs[1] + "/readyz",
	})
}

// Log returns everything program ("fleetcontroller", "fleetagent") has
// written so far.
func (f *Fleet) Log(program string) string { return f.procs.log(program) }

// BundleDeployments returns the BundleDeployments of the local cluster
// that the controller made for the Bundle name of FleetWorkspace.
func (f *Fleet) BundleDeployments(ctx context.Context, bundle string) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("fleet.cattle.io/v1alpha1")
	list.SetKind("BundleDeploymentList")
	if err := f.env.Client.List(ctx, list, client.InNamespace(FleetClusterNamespace), client.MatchingLabels{
		"fleet.cattle.io/bundle-name": bundle, "fleet.cattle.io/bundle-namespace": FleetWorkspace,
	}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return list.Items, nil
}
