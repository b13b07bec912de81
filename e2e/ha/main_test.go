// Package ha tests what users of several Steward replicas live through:
// three replicas serving one certificate behind a connection spreader
// that plays their Service (harness.Spreader), the rendered webhook
// configurations pointed at it, and a real API server calling them while
// 16 writers send guarded writes. Replicas are upgraded, drained, killed,
// reconfigured and lose the audit's leadership, and every write is
// checked against the answer a healthy Steward gives it.
//
// It is a package of its own, with one environment, so that the e2e
// suite's other tests neither wait for it nor disturb its replicas.
package ha

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stewardhq/steward/e2e/harness"
)

// haConfig runs the audit every ten seconds, the shortest interval
// Steward accepts.
const haConfig = harness.DefaultConfig + "audit:\n  interval: 10s\n"

var (
	env      *harness.Env
	replicas *harness.Replicas
	// replicaCount and shutdown are what the rendered Deployment (and the
	// chart's defaults) set: the number of replicas, --shutdown-delay,
	// --shutdown-timeout and terminationGracePeriodSeconds.
	replicaCount int
	shutdown     harness.Shutdown
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := harness.Start(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ha: starting the API server: %v\n", err)
		return 1
	}
	defer e.Stop()
	if replicaCount, err = harness.RenderedReplicas(); err != nil {
		fmt.Fprintf(os.Stderr, "ha: %v\n", err)
		return 1
	}
	if shutdown, err = harness.RenderedShutdown(); err != nil {
		fmt.Fprintf(os.Stderr, "ha: %v\n", err)
		return 1
	}
	root, err := harness.RepoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ha: %v\n", err)
		return 1
	}
	// The audit publishes PolicyReports: the CRDs Steward ships.
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(root, "manifests", "policyreport-crds", "policyreports.yaml"),
		filepath.Join(root, "manifests", "policyreport-crds", "clusterpolicyreports.yaml"),
	}, ErrorIfPathMissing: true}); err != nil {
		fmt.Fprintf(os.Stderr, "ha: installing the PolicyReport CRDs: %v\n", err)
		return 1
	}
	// The replicas keep their registration, as the shipped Deployment's do.
	r, err := e.StartReplicas(ctx, replicaCount, harness.StewardOptions{
		Config:           haConfig,
		ProvideCerts:     true,
		KeepRegistration: true,
		Args:             shutdown.Args(),
	}, harness.SpreaderOptions{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "ha: starting %d replicas: %v\n", replicaCount, err)
		return 1
	}
	env, replicas = e, r
	return m.Run()
}
