package harness

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FluxRepo is Flux's controllers applying the path ./deploy of a Git
// repository served from 127.0.0.1, through a GitRepository and a
// Kustomization of one name in FluxNamespace: the real-controller tests'
// setup, and the sandbox's with --flux.
type FluxRepo struct {
	Flux                  *Flux
	Repo                  *GitRepo
	Source, Kustomization *unstructured.Unstructured
	// Applied is the Kustomization as its first reconcile left it, and
	// Rev the commit that reconcile was to apply.
	Applied *unstructured.Unstructured
	Rev     string
}

// FluxRepoOptions say what StartFluxRepo sets up.
type FluxRepoOptions struct {
	// Name names the repository, the GitRepository and the
	// Kustomization.
	Name string
	// Files are the repository's first commit: path → content.
	Files map[string]string
	// Interval is how often source-controller fetches the repository and
	// kustomize-controller applies it; one minute when zero.
	Interval time.Duration
	// Kustomization holds fields added to the Kustomization's spec.
	Kustomization map[string]any
	// Flux says which controllers run.
	Flux FluxOptions
}

// FluxRepoReadyTimeout bounds the wait for the first reconcile.
const FluxRepoReadyTimeout = 3 * time.Minute

// StartFluxRepo starts Flux's controllers (StartFlux) and a Git server for
// lt, commits o.Files as a new repository's first commit, creates the
// GitRepository and the Kustomization (prune on), and waits until
// kustomize-controller reports it Ready. When lt ends the Kustomization
// and the GitRepository are deleted while the controllers still run (so
// they prune and remove their finalizers), then the controllers stop.
func (e *Env) StartFluxRepo(ctx context.Context, lt Lifetime, o FluxRepoOptions) (*FluxRepo, error) {
	flux, err := e.StartFlux(ctx, lt, o.Flux)
	if err != nil {
		return nil, err
	}
	git, err := e.StartGitServer(lt)
	if err != nil {
		return nil, err
	}
	repo, err := git.NewRepo(ctx, o.Name)
	if err != nil {
		return nil, err
	}
	rev, err := repo.Commit(ctx, "the first commit", o.Files)
	if err != nil {
		return nil, err
	}
	interval := o.Interval
	if interval == 0 {
		interval = time.Minute
	}
	spec := map[string]any{
		"interval": interval.String(), "path": "./deploy", "prune": true,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": o.Name},
	}
	for k, v := range o.Kustomization {
		spec[k] = v
	}
	source := FluxObject(o.Name, "source.toolkit.fluxcd.io/v1", "GitRepository", map[string]any{
		"interval": interval.String(), "url": repo.URL, "ref": map[string]any{"branch": repo.Branch},
	})
	kustomization := FluxObject(o.Name, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", spec)
	for _, obj := range []*unstructured.Unstructured{source, kustomization} {
		if err := e.Client.Create(ctx, obj.DeepCopy()); err != nil {
			return nil, fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	lt.Cleanup(func() { e.deleteFluxObjects(lt, kustomization, source) })
	applied, err := flux.WaitFluxReady(ctx, kustomization, FluxRepoReadyTimeout)
	if err != nil {
		return nil, err
	}
	return &FluxRepo{Flux: flux, Repo: repo, Source: source, Kustomization: kustomization, Applied: applied, Rev: rev}, nil
}

// FluxObject is a Flux object named name in FluxNamespace.
func FluxObject(name, apiVersion, kind string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": FluxNamespace},
		"spec":       spec,
	}}
}

// deleteFluxObjects deletes objs and waits until their controllers have
// removed their finalizers and the objects are gone.
func (e *Env) deleteFluxObjects(lt Lifetime, objs ...*unstructured.Unstructured) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, obj := range objs {
		if err := client.IgnoreNotFound(e.Client.Delete(ctx, obj.DeepCopy())); err != nil {
			lt.Errorf("deleting %s %s: %v", obj.GetKind(), obj.GetName(), err)
			continue
		}
		if err := Poll(ctx, time.Minute, func() error {
			err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy())
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%s %s is still there (%v)", obj.GetKind(), obj.GetName(), err)
		}); err != nil {
			lt.Errorf("%v", err)
		}
	}
}

// SandboxFluxRepo is the repository `make sandbox SANDBOX_FLUX=1` has
// Flux apply, and docs/walkthroughs.md's real-Flux walkthrough starts
// from: the namespace storefront and a Deployment web whose replicas Git
// leaves to an autoscaler. Flux fetches and applies it every 10 seconds.
func SandboxFluxRepo() FluxRepoOptions {
	return FluxRepoOptions{
		Name:     "sandbox",
		Interval: 10 * time.Second,
		Files: map[string]string{"deploy/storefront.yaml": `apiVersion: v1
kind: Namespace
metadata: {name: storefront}
---
# No replicas: a HorizontalPodAutoscaler sets them, and Flux keeps its value.
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: storefront}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "ghcr.io/stefanprodan/podinfo:6.7.0"}]}
`},
	}
}
