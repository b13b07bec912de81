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
	"strings"
)

// controllerManagerControllers are the controllers of kube-controller-manager
// Options.ControllerManager runs: the garbage collector (Foreground and
// Background cascades through ownerReferences), namespace deletion, and the
// Deployment and ReplicaSet controllers. The rest need nodes, a cloud or
// signing keys this environment does not have.
var controllerManagerControllers = []string{"garbagecollector", "namespace", "deployment", "replicaset"}

// ControllerManagerUser is the user the API server sees one of
// kube-controller-manager's controllers as: with
// --use-service-account-credentials each writes as its own service account
// in kube-system ("generic-garbage-collector", "namespace-controller",
// "deployment-controller", "replicaset-controller"), the identities
// Steward's matchConditions exempt.
func ControllerManagerUser(account string) string {
	return "system:serviceaccount:kube-system:" + account
}

// ControllerManagerBinary returns the path of kube-controller-manager in the
// tools cache (KUBEBUILDER_ASSETS), which make tools builds beside
// kube-apiserver from the same k8s.io/kubernetes.
func ControllerManagerBinary() (string, error) {
	assets, err := AssetsDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(assets, "kube-controller-manager")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("kube-controller-manager is missing from %s: run `make tools` to build it, then run the tests through `make e2e` or `make test`: %w", assets, err)
	}
	return path, nil
}

// ControllerManager is kube-controller-manager running as a local process
// against the Env's API server (Options.ControllerManager).
type ControllerManager struct {
	procs *processes
}

// Log returns everything kube-controller-manager has written so far.
func (c *ControllerManager) Log() string { return c.procs.log(controllerManagerName) }

// LogTail returns the last n lines of kube-controller-manager's log.
func (c *ControllerManager) LogTail(n int) string {
	return logTail(filepath.Join(c.procs.dir, controllerManagerName+".log"), n)
}

const controllerManagerName = "kube-controller-manager"

// startControllerManager starts kube-controller-manager with the admin
// kubeconfig (from which, with --use-service-account-credentials, it
// creates each controller's service account in kube-system and a token of
// it), leader election off, serving its health on a free loopback port
// with a certificate the harness issues, and returns once /healthz answers.
// It is stopped when lt ends.
func (e *Env) startControllerManager(ctx context.Context, lt Lifetime) (*ControllerManager, error) {
	binary, err := ControllerManagerBinary()
	if err != nil {
		return nil, err
	}
	procs, err := e.newProcesses(lt, controllerManagerName+"-")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	serving, err := NewServingCert()
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(procs.dir, "certs")
	if err := serving.Write(certDir); err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(serving.CA) {
		return nil, errors.New("reading the CA of kube-controller-manager's serving certificate")
	}
	args := []string{
		"--kubeconfig=" + e.Kubeconfig,
		// Delegated authentication and authorization of its own endpoints
		// (as kubeadm sets them); /healthz is always allowed.
		"--authentication-kubeconfig=" + e.Kubeconfig,
		"--authorization-kubeconfig=" + e.Kubeconfig,
		"--controllers=" + strings.Join(controllerManagerControllers, ","),
		"--use-service-account-credentials=true",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--tls-cert-file=" + filepath.Join(certDir, "tls.crt"),
		"--tls-private-key-file=" + filepath.Join(certDir, "tls.key"),
	}
	if err := procs.start(ctx, processSpec{
		name: controllerManagerName, binary: binary, args: args,
		readyURL: "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz",
		readyTLS: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	}); err != nil {
		return nil, err
	}
	return &ControllerManager{procs: procs}, nil
}
