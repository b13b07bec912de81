// Package e2e tests Steward through a real kube-apiserver and etcd: the
// rendered webhook configurations are registered, the real steward binary
// answers them, and requests go through the API server and kubectl.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stewardhq/steward/e2e/harness"
)

// env is the environment every test in the package shares: one API server
// with the sample CRDs, kube-controller-manager's garbage collector,
// namespace, deployment and replicaset controllers (so Foreground deletion,
// ownerReference cascades and namespace deletion are Kubernetes' own), and
// one Steward running harness.DefaultConfig. A test
// that restarts Steward with another configuration must restore the default
// (env.RestartSteward(ctx, harness.DefaultConfig)) before it returns.
var env *harness.Env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := harness.StartWith(ctx, harness.Options{ControllerManager: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting the API server: %v\n", err)
		return 1
	}
	defer e.Stop()
	if _, err := e.StartSteward(ctx, harness.DefaultConfig); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting steward: %v\n", err)
		return 1
	}
	env = e
	code := m.Run()
	if code != 0 && e.Steward != nil {
		fmt.Fprintf(os.Stderr, "--- steward log (last lines of %s) ---\n%s\n", e.Steward.LogPath(), e.Steward.LogTail(80))
	}
	return code
}
