// Package harness runs Steward the way a cluster runs it, on one machine: a
// real kube-apiserver and etcd (envtest, with the binaries `make tools`
// builds), the sample CRDs and objects in e2e/crds, the real `steward`
// binary as a subprocess, and the webhook configurations rendered into
// manifests/base/webhooks.yaml, registered with their clientConfig pointed
// at that subprocess. What ships is what is tested: the harness configures
// nothing about the rules.
//
// A test package starts one Env in TestMain and one Steward in it:
//
//	env, err := harness.Start(ctx)
//	...
//	defer env.Stop()
//	if _, err := env.StartSteward(ctx, harness.DefaultConfig); err != nil { ... }
//
// and then talks to the API server through env.Client (admin), env.As("jane",
// "devs") (impersonation) or env.Kubectl(ctx, stdin, "--as", "jane", "apply",
// "-f", "-"); reads Steward's metrics with env.Steward.Counter; finds audit
// annotations with env.AuditEvents; swaps the configuration with
// env.RestartSteward. With --cert-mode=self-managed among the flags, Steward
// brings its own certificates and injects its CA.
//
// # Replicas
//
// env.StartReplicas runs several Stewards of one configuration, serving
// one certificate, behind a Spreader on 127.0.0.1 that plays their
// Service (the API server's EndpointSlices refuse loopback addresses):
// the webhook configurations name the Spreader, which hands each new
// connection to the next ready replica, drops a replica a set lag after
// its readiness fails, and leaves open connections where they are. Each
// replica is a Steward with its own ports, log and $POD_NAME, stopped,
// killed and restarted with the Steward methods; Replicas.Add starts a
// replacement, and StewardBinary with Steward.UseBinary rolls a replica
// to another build.
//
// # Kubernetes' controllers
//
// An Env started with Options.ControllerManager (the e2e package's shared
// one is) runs kube-controller-manager (built by `make tools` from the API
// server's own k8s.io/kubernetes) with its garbage collector, namespace,
// deployment and replicaset controllers, each writing as its own service
// account in kube-system (ControllerManagerUser). In an Env without it, a
// deletion that waits on foregroundDeletion or on a namespace's contents
// waits until the test plays the garbage collector or the namespace
// controller.
//
// # Authorization
//
// The API server authorizes with RBAC, and Start binds cluster-admin to every
// authenticated user, so an impersonated user is refused only by Steward,
// never by RBAC. Tests about who may do what therefore prove Steward's
// decisions, not the test's role bindings.
//
// # Webhook propagation
//
// The API server's admission plugins read webhook configurations through an
// informer, so a change takes effect a moment (about a second) after it is
// written. StartSteward and RestartSteward hide this: after registering the
// configurations they write a probe configuration and return only once the
// API server has called the probe, which it can do only after it has seen
// every earlier write. Tests that change webhook configurations themselves
// must tolerate the delay, e.g. with Eventually.
//
// # Processes
//
// etcd, kube-apiserver and steward never outlive the process that started
// them. Stop ends them in order. SIGINT and SIGTERM stop everything before
// the process exits (a second signal kills at once). Unless
// Options.SurviveParent is set, the process itself gets SIGTERM when its
// parent (go test) dies. The steward child gets SIGKILL when the harness
// dies (Pdeathsig). And a watchdog shell, armed before anything starts,
// kills every process whose command line names the Env's work directory and
// removes the directories if the harness dies without stopping (a go test
// -timeout panic, SIGKILL).
package harness
