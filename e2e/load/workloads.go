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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// workloadNamed returns the workload of that name, or nil.
func workloadNamed(name string) *workload {
	for _, w := range workloads {
		if w.Name == name {
			return w
		}
	}
	return nil
}

// humanDenied are the configurations that refuse a person's edits of
// Fleet-managed objects.
var humanDenied = map[configID]bool{cfgPolicy: true, cfgSteward: true}

// workloads are every workload, in the order they run. The update
// workloads keep one object per writer, created by its owner, in a pool.
var workloads = []*workload{
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
			return b.c.deleteMarked(ctx, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, fleetNamespace, "configmap-create")
		},
	},
	{
		Name: "fleet-configmap-update-agent", Short: "CM update (agent)", Title: "Fleet agent updates Fleet-managed ConfigMaps", Phase: 1, Verb: "update", User: agentUser,
		prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
			agent := configMaps(b.c.as(agentUser).kube)
			return agentCMs.ops(ctx, writers, agent, agent, func(cm *corev1.ConfigMap, seq int) error {
				cm.Data["revision"] = strconv.Itoa(seq)
				return nil
			})
		},
	},
	{
		Name: "fleet-deployment-update-agent", Short: "Deploy update (agent)", Title: "Fleet agent updates Fleet-managed Deployments (new image and config checksum)", Phase: 1, Verb: "update", User: agentUser,
		prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
			agent := deployments(b.c.as(agentUser).kube)
			return agentDeploys.ops(ctx, writers, agent, agent, func(d *appsv1.Deployment, seq int) error {
				d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/shop/web:1.42." + strconv.Itoa(seq)
				d.Spec.Template.Annotations["checksum/config"] = strconv.Itoa(seq)
				return nil
			})
		},
	},
	{
		Name: "fleet-configmap-update-human", Short: "CM update (person)", Title: "a person edits Fleet-managed ConfigMaps (Steward denies)", Phase: 1, Verb: "update", User: humanUser, Denies: humanDenied,
		prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
			human := configMaps(b.c.as(humanUser).kube)
			return humanCMs.ops(ctx, writers, configMaps(b.c.as(agentUser).kube), human, func(cm *corev1.ConfigMap, seq int) error {
				cm.Data["LOG_LEVEL"] = "debug-" + strconv.Itoa(seq)
				return nil
			})
		},
	},
	{
		Name: "fleet-deployment-update-human", Short: "Deploy update (person)", Title: "a person changes the image of Fleet-managed Deployments (Steward denies)", Phase: 1, Verb: "update", User: humanUser, Denies: humanDenied,
		prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
			human := deployments(b.c.as(humanUser).kube)
			return humanDeploys.ops(ctx, writers, deployments(b.c.as(agentUser).kube), human, func(d *appsv1.Deployment, seq int) error {
				d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/shop/web:hotfix-" + strconv.Itoa(seq)
				return nil
			})
		},
	},
	{
		Name: "claim-create", Short: "claim create", Title: "a developer creates Crossplane claims (PostgreSQLInstance), large caches present", Phase: 2, Verb: "create", User: humanUser,
		prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
			dyn := b.c.as(humanUser).dyn.Resource(claimGVR).Namespace(claimsNamespace)
			return perWriter(writers, func(w int) op {
				return func(ctx context.Context, seq int) error {
					_, err := dyn.Create(ctx, claim(fmt.Sprintf("db-%s-%d-%d", b.nonce, w, seq)), metav1.CreateOptions{})
					return err
				}
			}), nil
		},
		cleanup: func(ctx context.Context, b *bench) error {
			return b.c.deleteMarked(ctx, claimGVR, claimsNamespace, "claim-create")
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
			return b.c.deleteMarked(ctx, managedGVR, "", "managed-create")
		},
	},
	{
		Name: "helmrelease-update-v2beta1", Short: "HelmRelease v2beta1", Title: "kustomize-controller applies HelmReleases written as v2beta1 (deprecated)", Phase: 2, Verb: "update", User: fluxUser,
		prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
			flux := helmReleasesAs(b, fluxUser)
			return helmReleases.ops(ctx, writers, flux, flux, func(hr *unstructured.Unstructured, seq int) error {
				return unstructured.SetNestedField(hr.Object, int64(seq), "spec", "values", "replicaCount")
			})
		},
	},
	{
		Name: "flux-event-create", Short: "Flux Event", Title: "kustomize-controller records Events about Kustomizations (every other one suspended)", Phase: 2, Verb: "create", User: fluxUser,
		prepare: func(ctx context.Context, b *bench, writers int) ([]op, error) {
			kube := b.c.as(fluxUser).kube
			return perWriter(writers, func(w int) op {
				return func(ctx context.Context, seq int) error {
					ks := b.seeded.kustomizations[(w+seq)%len(b.seeded.kustomizations)]
					_, err := kube.CoreV1().Events(fluxNamespace).Create(ctx, fluxEvent(ks, w*1_000_000+seq), metav1.CreateOptions{})
					return err
				}
			}), nil
		},
		// No cleanup: it is the last workload, and a cluster expires
		// Events by itself.
	},
}

func withLabel(labels map[string]string, k, v string) map[string]string {
	if labels == nil {
		labels = map[string]string{}
	}
	labels[k] = v
	return labels
}

// Pools of objects the update workloads change, one per writer.
var (
	agentCMs     = &pool[*corev1.ConfigMap]{prefix: "agent-cm"}
	humanCMs     = &pool[*corev1.ConfigMap]{prefix: "human-cm"}
	agentDeploys = &pool[*appsv1.Deployment]{prefix: "agent-web"}
	humanDeploys = &pool[*appsv1.Deployment]{prefix: "human-web"}
	helmReleases = &pool[*unstructured.Unstructured]{prefix: "bench-hr"}
)

// pool holds one object per writer, created by its owner; each writer
// keeps its latest copy, so writers never conflict with each other.
type pool[T interface {
	runtime.Object
	metav1.Object
}] struct {
	prefix string
	objs   []T
}

// access is what a pool needs of a typed or dynamic client.
type access[T any] struct {
	create func(ctx context.Context, name string) (T, error)
	get    func(ctx context.Context, name string) (T, error)
	update func(ctx context.Context, obj T) (T, error)
}

// ops creates the objects missing for writers with owner, and returns
// one op per writer that changes its copy and updates it as writer, reading
// it again (as owner) after a conflict.
func (p *pool[T]) ops(ctx context.Context, writers int, owner, writer access[T], change func(T, int) error) ([]op, error) {
	for len(p.objs) < writers {
		obj, err := owner.create(ctx, fmt.Sprintf("%s-%d", p.prefix, len(p.objs)))
		if err != nil {
			return nil, fmt.Errorf("creating the objects to update: %w", err)
		}
		p.objs = append(p.objs, obj)
	}
	return perWriter(writers, func(w int) op {
		return func(ctx context.Context, seq int) error {
			obj := p.objs[w].DeepCopyObject().(T)
			if err := change(obj, seq); err != nil {
				return err
			}
			updated, err := writer.update(ctx, obj)
			switch {
			case err == nil:
				p.objs[w] = updated
			case apierrors.IsConflict(err):
				if fresh, gerr := owner.get(ctx, obj.GetName()); gerr == nil {
					p.objs[w] = fresh
				}
			}
			return err
		}
	}), nil
}

func configMaps(kube kubernetes.Interface) access[*corev1.ConfigMap] {
	c := kube.CoreV1().ConfigMaps(fleetNamespace)
	return access[*corev1.ConfigMap]{
		create: func(ctx context.Context, name string) (*corev1.ConfigMap, error) {
			return c.Create(ctx, fleetConfigMap(name), metav1.CreateOptions{})
		},
		get: func(ctx context.Context, name string) (*corev1.ConfigMap, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		update: func(ctx context.Context, obj *corev1.ConfigMap) (*corev1.ConfigMap, error) {
			return c.Update(ctx, obj, metav1.UpdateOptions{})
		},
	}
}

func deployments(kube kubernetes.Interface) access[*appsv1.Deployment] {
	c := kube.AppsV1().Deployments(fleetNamespace)
	return access[*appsv1.Deployment]{
		create: func(ctx context.Context, name string) (*appsv1.Deployment, error) {
			return c.Create(ctx, fleetDeployment(name), metav1.CreateOptions{})
		},
		get: func(ctx context.Context, name string) (*appsv1.Deployment, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		update: func(ctx context.Context, obj *appsv1.Deployment) (*appsv1.Deployment, error) {
			return c.Update(ctx, obj, metav1.UpdateOptions{})
		},
	}
}

// helmReleasesAs reads and writes HelmReleases through v2beta1; the owner
// (the admin) creates them through v2 first.
func helmReleasesAs(b *bench, user string) access[*unstructured.Unstructured] {
	old := b.c.as(user).dyn.Resource(hrOldGVR).Namespace(fluxNamespace)
	return access[*unstructured.Unstructured]{
		create: func(ctx context.Context, name string) (*unstructured.Unstructured, error) {
			if _, err := b.c.as("").dyn.Resource(hrGVR).Namespace(fluxNamespace).Create(ctx, helmRelease(name, false), metav1.CreateOptions{}); err != nil {
				return nil, err
			}
			return old.Get(ctx, name, metav1.GetOptions{})
		},
		get: func(ctx context.Context, name string) (*unstructured.Unstructured, error) {
			return old.Get(ctx, name, metav1.GetOptions{})
		},
		update: func(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			return old.Update(ctx, obj, metav1.UpdateOptions{})
		},
	}
}
