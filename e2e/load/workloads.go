package main

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
)

// workload is one kind of write traffic.
type workload struct {
	// Name is the workload's identifier (the -workloads flag).
	Name string
	// Title describes it in the report; Short labels it in the chart.
	Title string
	Short string
	// Phase 1 runs before the large caches are seeded, phase 2 after.
	Phase int
	// Verb is "create" or "update".
	Verb string
	// User is who writes.
	User string
	// Denies lists the configurations expected to refuse every write.
	Denies map[configID]bool
	// prepare returns one op per writer.
	prepare func(ctx context.Context, b *bench, writers int) ([]op, error)
	// cleanup removes what the workload created, after each configuration.
	cleanup func(ctx context.Context, b *bench) error
}

// workloads returns every workload, in the order they run.
func workloads() []*workload {
	agentCMs := &configMapPool{prefix: "agent-cm"}
	humanCMs := &configMapPool{prefix: "human-cm"}
	agentDeploys := &deploymentPool{prefix: "agent-web"}
	humanDeploys := &deploymentPool{prefix: "human-web"}
	hrs := &helmReleasePool{prefix: "bench-hr"}
	humanDenied := map[configID]bool{cfgPolicy: true, cfgSteward: true}
	return []*workload{
		{
			Name: "fleet-configmap-create-agent", Short: "CM create (agent)", Title: "Fleet agent creates Fleet-managed ConfigMaps", Phase: 1, Verb: "create", User: agentUser,
			prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
				kube := b.c.as(agentUser).kube
				return perWriter(writers, func(w int) op {
					return func(ctx context.Context, seq int) error {
						cm := fleetConfigMap(fmt.Sprintf("new-%s-%d-%d", b.nonce, w, seq))
						cm.Labels[benchLabel] = "configmap-create"
						_, err := kube.CoreV1().ConfigMaps(fleetNamespace).Create(ctx, cm, metav1.CreateOptions{})
						return err
					}
				}), nil
			},
			cleanup: func(ctx context.Context, b *bench) error {
				return b.c.slow.kube.CoreV1().ConfigMaps(fleetNamespace).DeleteCollection(ctx, metav1.DeleteOptions{},
					metav1.ListOptions{LabelSelector: benchLabel + "=configmap-create"})
			},
		},
		{
			Name: "fleet-configmap-update-agent", Short: "CM update (agent)", Title: "Fleet agent updates Fleet-managed ConfigMaps", Phase: 1, Verb: "update", User: agentUser,
			prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
				return agentCMs.ops(ctx, b, writers, b.c.as(agentUser).kube, func(cm *corev1.ConfigMap, seq int) {
					cm.Data["revision"] = strconv.Itoa(seq)
				})
			},
		},
		{
			Name: "fleet-deployment-update-agent", Short: "Deploy update (agent)", Title: "Fleet agent updates Fleet-managed Deployments (new image and config checksum)", Phase: 1, Verb: "update", User: agentUser,
			prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
				return agentDeploys.ops(ctx, b, writers, b.c.as(agentUser).kube, func(d *appsv1.Deployment, seq int) {
					d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/shop/web:1.42." + strconv.Itoa(seq)
					d.Spec.Template.Annotations["checksum/config"] = strconv.Itoa(seq)
				})
			},
		},
		{
			Name: "fleet-configmap-update-human", Short: "CM update (person)", Title: "a person edits Fleet-managed ConfigMaps (Steward denies)", Phase: 1, Verb: "update", User: humanUser, Denies: humanDenied,
			prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
				return humanCMs.ops(ctx, b, writers, b.c.as(humanUser, humanGroups...).kube, func(cm *corev1.ConfigMap, seq int) {
					cm.Data["LOG_LEVEL"] = "debug-" + strconv.Itoa(seq)
				})
			},
		},
		{
			Name: "fleet-deployment-update-human", Short: "Deploy update (person)", Title: "a person changes the image of Fleet-managed Deployments (Steward denies)", Phase: 1, Verb: "update", User: humanUser, Denies: humanDenied,
			prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
				return humanDeploys.ops(ctx, b, writers, b.c.as(humanUser, humanGroups...).kube, func(d *appsv1.Deployment, seq int) {
					d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/shop/web:hotfix-" + strconv.Itoa(seq)
				})
			},
		},
		{
			Name: "claim-create", Short: "claim create", Title: "a developer creates Crossplane claims (PostgreSQLInstance), large caches present", Phase: 2, Verb: "create", User: humanUser,
			prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
				dyn := b.c.as(humanUser, humanGroups...).dyn.Resource(claimGVR).Namespace(claimsNamespace)
				return perWriter(writers, func(w int) op {
					return func(ctx context.Context, seq int) error {
						_, err := dyn.Create(ctx, claim(fmt.Sprintf("db-%s-%d-%d", b.nonce, w, seq)), metav1.CreateOptions{})
						return err
					}
				}), nil
			},
			cleanup: func(ctx context.Context, b *bench) error {
				return b.c.slow.dyn.Resource(claimGVR).Namespace(claimsNamespace).DeleteCollection(ctx, metav1.DeleteOptions{},
					metav1.ListOptions{LabelSelector: benchLabel + "=claim-create"})
			},
		},
		{
			Name: "managed-create", Short: "MR create", Title: "Crossplane composes managed resources (RDSInstance with an external name), large caches present", Phase: 2, Verb: "create", User: crossplaneUser,
			prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
				dyn := b.c.as(crossplaneUser).dyn.Resource(managedGVR)
				return perWriter(writers, func(w int) op {
					return func(ctx context.Context, seq int) error {
						xr, claimName := b.seeded.compositeFor(w*7919 + seq)
						mr := managed(fmt.Sprintf("%s-%s-%d-%d", xr, b.nonce, w, seq), xr, claimName)
						mr.SetLabels(withLabel(mr.GetLabels(), benchLabel, "managed-create"))
						_, err := dyn.Create(ctx, mr, metav1.CreateOptions{})
						return err
					}
				}), nil
			},
			cleanup: func(ctx context.Context, b *bench) error {
				return b.c.slow.dyn.Resource(managedGVR).DeleteCollection(ctx, metav1.DeleteOptions{},
					metav1.ListOptions{LabelSelector: benchLabel + "=managed-create"})
			},
		},
		{
			Name: "helmrelease-update-v2beta1", Short: "HelmRelease v2beta1", Title: "kustomize-controller applies HelmReleases written as v2beta1 (deprecated)", Phase: 2, Verb: "update", User: fluxUser,
			prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
				return hrs.ops(ctx, b, writers)
			},
		},
		{
			Name: "flux-event-create", Short: "Flux Event", Title: "kustomize-controller records Events about Kustomizations (every other one suspended)", Phase: 2, Verb: "create", User: fluxUser,
			prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
				kube := b.c.as(fluxUser).kube
				return perWriter(writers, func(w int) op {
					return func(ctx context.Context, seq int) error {
						ks := b.seeded.kustomizationFor(w + seq)
						_, err := kube.CoreV1().Events(fluxNamespace).Create(ctx, fluxEvent(ks, w*1_000_000+seq), metav1.CreateOptions{})
						return err
					}
				}), nil
			},
			// No cleanup: it is the last workload, and a cluster expires
			// Events by itself.
		},
	}
}

func perWriter(writers int, f func(w int) op) []op {
	ops := make([]op, writers)
	for w := range ops {
		ops[w] = f(w)
	}
	return ops
}

func withLabel(labels map[string]string, k, v string) map[string]string {
	if labels == nil {
		labels = map[string]string{}
	}
	labels[k] = v
	return labels
}

// configMapPool holds one Fleet-managed ConfigMap per writer, created by
// the agent; each writer keeps its latest copy so it never conflicts.
type configMapPool struct {
	prefix string
	objs   []*corev1.ConfigMap
}

func (p *configMapPool) ops(ctx context.Context, b *bench, writers int, kube kubernetes.Interface, change func(*corev1.ConfigMap, int)) ([]op, error) {
	agent := b.c.as(agentUser).kube.CoreV1().ConfigMaps(fleetNamespace)
	for len(p.objs) < writers {
		cm, err := agent.Create(ctx, fleetConfigMap(fmt.Sprintf("%s-%d", p.prefix, len(p.objs))), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating the ConfigMaps to update: %w", err)
		}
		p.objs = append(p.objs, cm)
	}
	client := kube.CoreV1().ConfigMaps(fleetNamespace)
	return perWriter(writers, func(w int) op {
		return func(ctx context.Context, seq int) error {
			cm := p.objs[w].DeepCopy()
			change(cm, seq)
			updated, err := client.Update(ctx, cm, metav1.UpdateOptions{})
			switch {
			case err == nil:
				p.objs[w] = updated
			case apierrors.IsConflict(err):
				if fresh, gerr := agent.Get(ctx, cm.Name, metav1.GetOptions{}); gerr == nil {
					p.objs[w] = fresh
				}
			}
			return err
		}
	}), nil
}

// deploymentPool is configMapPool for Deployments.
type deploymentPool struct {
	prefix string
	objs   []*appsv1.Deployment
}

func (p *deploymentPool) ops(ctx context.Context, b *bench, writers int, kube kubernetes.Interface, change func(*appsv1.Deployment, int)) ([]op, error) {
	agent := b.c.as(agentUser).kube.AppsV1().Deployments(fleetNamespace)
	for len(p.objs) < writers {
		d, err := agent.Create(ctx, fleetDeployment(fmt.Sprintf("%s-%d", p.prefix, len(p.objs))), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating the Deployments to update: %w", err)
		}
		p.objs = append(p.objs, d)
	}
	client := kube.AppsV1().Deployments(fleetNamespace)
	return perWriter(writers, func(w int) op {
		return func(ctx context.Context, seq int) error {
			d := p.objs[w].DeepCopy()
			change(d, seq)
			updated, err := client.Update(ctx, d, metav1.UpdateOptions{})
			switch {
			case err == nil:
				p.objs[w] = updated
			case apierrors.IsConflict(err):
				if fresh, gerr := agent.Get(ctx, d.Name, metav1.GetOptions{}); gerr == nil {
					p.objs[w] = fresh
				}
			}
			return err
		}
	}), nil
}

// helmReleasePool holds one HelmRelease per writer, read and written
// through v2beta1.
type helmReleasePool struct {
	prefix string
	objs   []*unstructured.Unstructured
}

func (p *helmReleasePool) ops(ctx context.Context, b *bench, writers int) ([]op, error) {
	admin := b.c.dyn.Resource(hrGVR).Namespace(fluxNamespace)
	old := b.c.as(fluxUser).dyn.Resource(hrOldGVR).Namespace(fluxNamespace)
	for len(p.objs) < writers {
		name := fmt.Sprintf("%s-%d", p.prefix, len(p.objs))
		if _, err := admin.Create(ctx, helmRelease(name, false), metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating the HelmReleases to update: %w", err)
		}
		hr, err := old.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading HelmRelease %s as v2beta1: %w", name, err)
		}
		p.objs = append(p.objs, hr)
	}
	return perWriter(writers, func(w int) op {
		return func(ctx context.Context, seq int) error {
			hr := p.objs[w].DeepCopy()
			if err := unstructured.SetNestedField(hr.Object, int64(seq), "spec", "values", "replicaCount"); err != nil {
				return err
			}
			updated, err := old.Update(ctx, hr, metav1.UpdateOptions{})
			switch {
			case err == nil:
				p.objs[w] = updated
			case apierrors.IsConflict(err):
				if fresh, gerr := old.Get(ctx, hr.GetName(), metav1.GetOptions{}); gerr == nil {
					p.objs[w] = fresh
				}
			}
			return err
		}
	}), nil
}
