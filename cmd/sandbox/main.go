// Command sandbox runs Steward against a real kube-apiserver and etcd on this
// machine (`make sandbox`): it installs the sample CRDs in e2e/crds, runs
// the steward binary, registers the webhook configurations rendered in
// manifests/base/webhooks.yaml, writes an admin kubeconfig to
// $KUBECONFIG_OUT (default ./sandbox.kubeconfig), prints "sandbox ready" and
// serves until SIGINT or SIGTERM, then stops everything it started. With
// --replicas N it runs N Stewards behind a connection spreader that plays
// their Service, with the Deployment's shutdown settings, as e2e/ha does.
// With --flux it also starts Flux's real source-, kustomize- and
// helm-controller (built by the Makefile) and a Git repository on
// 127.0.0.1 that Flux applies, and prints its working tree, where
// commits are pushed from (docs/walkthroughs.md walks it).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/stewardhq/steward/e2e/harness"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// startFailed reports that Steward did not start.
func startFailed(stderr io.Writer, configPath string, err error) int {
	what := "starting steward"
	if configPath != "" {
		what += " with configuration " + configPath + " (copied into the work directory)"
	}
	fmt.Fprintf(stderr, "sandbox: %s: %v\n", what, err)
	return 1
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "Steward configuration file (StewardConfiguration YAML); every rule's defaults when empty")
	withFlux := fs.Bool("flux", false, "also start Flux's real controllers (KUSTOMIZE_CONTROLLER, SOURCE_CONTROLLER, HELM_CONTROLLER: the Makefile builds them) and a local Git repository they apply")
	replicaCount := fs.Int("replicas", 1, "Steward replicas; more than one run behind a connection spreader on 127.0.0.1 that plays their Service, with the rendered Deployment's shutdown settings")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *replicaCount < 1 {
		fmt.Fprintln(stderr, "sandbox: --replicas must be at least 1")
		return 2
	}
	config := harness.DefaultConfig
	if *configPath != "" {
		data, err := os.ReadFile(*configPath)
		if err != nil {
			fmt.Fprintf(stderr, "sandbox: %v\n", err)
			return 2
		}
		config = string(data)
	}
	out := os.Getenv("KUBECONFIG_OUT")
	if out == "" {
		out = "sandbox.kubeconfig"
	}
	out, err := filepath.Abs(out)
	if err != nil {
		fmt.Fprintf(stderr, "sandbox: %v\n", err)
		return 2
	}

	stopped := make(chan os.Signal, 1)
	ctx := context.Background()
	session := &harness.Session{Log: stderr}
	fmt.Fprintln(stdout, "starting kube-apiserver and etcd, installing the sample CRDs")
	env, err := harness.StartWith(ctx, harness.Options{
		OnSignal: func(sig os.Signal) { stopped <- sig },
		// The sandbox is a service: it keeps serving when the shell that
		// started it in the background exits, until SIGINT or SIGTERM.
		SurviveParent: true,
		Session:       session,
	})
	if err != nil {
		fmt.Fprintf(stderr, "sandbox: %v\n", err)
		return 1
	}
	defer env.Stop()
	fmt.Fprintln(stdout, "building and starting steward, registering its webhooks")
	var stewards []*harness.Steward
	var spreader *harness.Spreader
	if *replicaCount == 1 {
		steward, err := env.StartSteward(ctx, config)
		if err != nil {
			return startFailed(stderr, *configPath, err)
		}
		stewards = append(stewards, steward)
	} else {
		shutdown, err := harness.RenderedShutdown()
		if err != nil {
			fmt.Fprintf(stderr, "sandbox: %v\n", err)
			return 1
		}
		r, err := env.StartReplicas(ctx, *replicaCount, harness.StewardOptions{Config: config, ProvideCerts: true, Args: shutdown.Args()}, harness.SpreaderOptions{})
		if err != nil {
			return startFailed(stderr, *configPath, err)
		}
		stewards, spreader = r.Members(), r.Spreader
	}
	var fluxRepo *harness.FluxRepo
	if *withFlux {
		fmt.Fprintln(stdout, "starting Flux's controllers and a Git repository for them to apply")
		// env.Stop ends the session first: the Flux objects are deleted
		// while the API server and the controllers still run.
		if fluxRepo, err = env.StartFluxRepo(ctx, session, harness.SandboxFluxRepo()); err != nil {
			fmt.Fprintf(stderr, "sandbox: starting Flux: %v\n", err)
			return 1
		}
	}
	// A copy: the harness's own kubeconfig lives in its work directory.
	kubeconfig, err := os.ReadFile(env.Kubeconfig)
	if err == nil {
		err = os.WriteFile(out, kubeconfig, 0o600)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sandbox: writing the kubeconfig: %v\n", err)
		return 1
	}
	defer os.Remove(out)

	fmt.Fprintln(stdout, "sandbox ready")
	fmt.Fprintf(stdout, "\nkubeconfig:  %s\n", out)
	if spreader != nil {
		fmt.Fprintf(stdout, "service:     https://127.0.0.1:%d (the connection spreader in front of the replicas)\n", spreader.Port())
	}
	for _, steward := range stewards {
		fmt.Fprintf(stdout, "steward:     %s (log: %s)\nmetrics:     %s\n", steward.URL(""), steward.LogPath(), steward.MetricsURL())
	}
	fmt.Fprintf(stdout, `
Every user is cluster-admin for RBAC here, so only Steward refuses requests.
In another terminal:

  export KUBECONFIG=%s
  kubectl get crds
  kubectl get validatingwebhookconfiguration,mutatingwebhookconfiguration steward
  kubectl create namespace shop
  kubectl --as system:serviceaccount:cattle-fleet-system:fleet-agent -n shop \
    create deployment web --image=nginx:1.27
  kubectl --as system:serviceaccount:cattle-fleet-system:fleet-agent -n shop \
    label deployment web objectset.rio.cattle.io/hash=1f2e3d4c
  kubectl --as jane -n shop set image deployment/web nginx=nginx:1.28      # refused by fleetguard
  kubectl --as jane --as-group steward:break-glass -n shop \
    set image deployment/web nginx=nginx:1.28                               # allowed, audited
  curl -sk -H "Authorization: Bearer $(kubectl -n steward-system create token metrics-scraper)" %s | grep steward_decisions_total

docs/walkthroughs.md ("The sandbox, step by step") walks through every rule.
Stop with Ctrl-C.
`, out, stewards[0].MetricsURL())
	if fluxRepo != nil {
		fmt.Fprintf(stdout, `
Flux applies ./deploy of a Git repository; commit and push in its working tree
(docs/walkthroughs.md, "Flux for real: commit, see it applied, see an edit refused"):

  export SANDBOX_GIT=%s
  cd "$SANDBOX_GIT" && git log --oneline
  kubectl -n flux-system get gitrepository,kustomization sandbox
`, fluxRepo.Repo.WorkTree())
	}

	sig := <-stopped
	fmt.Fprintf(stdout, "sandbox stopped (%v)\n", sig)
	return 0
}
