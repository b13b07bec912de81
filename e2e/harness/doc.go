// Package harness runs Steward the way a cluster runs it, on one machine: a
// real kube-apiserver and etcd (envtest, built by `make tools`), the sample
// CRDs in e2e/crds, the real `steward` binary as a subprocess, and the
// webhook configurations rendered into manifests/base/webhooks.yaml,
// registered with their clientConfig pointed at that subprocess. What ships
// is what is tested: nothing about the rules is configured here.
//
// A test package starts one Env in TestMain and one Steward in it:
//
//	env, err := harness.Start(ctx)
//	...
//	defer env.Stop()
//	if _, err := env.StartSteward(ctx, harness.DefaultConfig); err != nil { ... }
//
// and then talks to the API server through env.Client (admin), env.As
// ("jane", "devs") (impersonation), or env.Kubectl(ctx, stdin, "--as", "jane",
// "apply", "-f", "-").
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
// informer, so a change becomes effective a moment (about a second) after it
// is written. StartSteward and RestartSteward hide this: after registering
// the configurations they write a probe configuration and return only once
// the API server has called the probe, which it can do only after it has seen
// every earlier write. Tests that change webhook configurations themselves
// must tolerate the delay, e.g. with Eventually.
//
// # Processes
//
// etcd, kube-apiserver and steward never outlive the process that started
// them: Stop ends them; SIGINT and SIGTERM stop everything before the process
// exits; the steward child gets SIGKILL when its parent dies (Pdeathsig); and
// a small watchdog kills etcd and kube-apiserver and removes their
// directories if the parent dies without stopping them (a go test -timeout
// panic, SIGKILL).
package harness
