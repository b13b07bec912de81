package main

import (
	"context"
	"fmt"

	"github.com/stewardhq/steward/bench"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// workload is one kind of write traffic: Name for -workloads, Title for
// the report and Short for the chart; Phase 1 runs before the large caches
// are seeded, phase 2 after; Verb is "create" or "update", User who writes;
// Denies are the configurations that refuse every write. prepare returns
// one op per writer; cleanup removes what the workload created.
type workload struct {
	Name, Title, Short, Verb, User string
	Phase                          int
	Denies                         map[configID]bool
	prepare                        func(ctx context.Context, b *loadRun, writers int) ([]op, error)
	cleanup                        func(ctx context.Context, c *cluster) error
}

// creates is a prepare whose writers each create new objects with write.
func creates(write func(ctx context.Context, b *loadRun, w, seq int) error) func(context.Context, *loadRun, int) ([]op, error) {
	return func(_ context.Context, b *loadRun, writers int) ([]op, error) {
		return perWriter(writers, func(w int) op {
			return func(ctx context.Context, seq int) error { return write(ctx, b, w, seq) }
		}), nil
	}
}

func workloadNamed(name string) *workload {
	return bench.FirstOf(workloads, func(w *workload) bool { return w.Name == name })
}

// humanDenied are the configurations that refuse a person's edits of
// Fleet-managed objects.
var humanDenied = map[configID]bool{cfgPolicy: true, cfgSteward: true}

// workloads are every workload, in the order they run; the update
// workloads patch one object per writer (patches).
var workloads = []*workload{
	{
		Name: "fleet-configmap-create-agent", Short: "CM create (agent)", Title: "Fleet agent creates Fleet-managed ConfigMaps", Phase: 1, Verb: "create", User: bench.AgentUser,
		prepare: creates(func(ctx context.Context, b *loadRun, w, seq int) error {
			cm := bench.FleetConfigMap(fmt.Sprintf("new-%s-%d-%d", b.nonce, w, seq))
			cm.Labels[bench.Label] = "configmap-create"
			_, err := b.c.users[bench.AgentUser].Kube.CoreV1().ConfigMaps(bench.FleetNamespace).Create(ctx, cm, metav1.CreateOptions{})
			return err
		}),
		cleanup: deleteMarked(bench.ConfigMapsGVR(), bench.FleetNamespace, "configmap-create"),
	},
	{
		Name: "fleet-configmap-update-agent", Short: "CM update (agent)", Title: "Fleet agent updates Fleet-managed ConfigMaps", Phase: 1, Verb: "update", User: bench.AgentUser,
		prepare: patches(bench.ConfigMapsGVR(), "agent-cm", bench.AgentUser, bench.AgentUser, types.MergePatchType, asUnstructured(bench.FleetConfigMap),
			func(seq int) string { return fmt.Sprintf(`{"data":{"revision":"%d"}}`, seq) }),
	},
	{
		Name: "fleet-deployment-update-agent", Short: "Deploy update (agent)", Title: "Fleet agent updates Fleet-managed Deployments (new image and config checksum)", Phase: 1, Verb: "update", User: bench.AgentUser,
		prepare: patches(bench.DeploymentsGVR(), "agent-web", bench.AgentUser, bench.AgentUser, types.StrategicMergePatchType, asUnstructured(bench.FleetDeployment), func(seq int) string {
			return fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"checksum/config":"%d"}},"spec":{"containers":[{"name":"web","image":"registry.example.com/shop/web:1.42.%d"}]}}}}`, seq, seq)
		}),
	},
	{
		Name: "fleet-configmap-update-human", Short: "CM update (person)", Title: "A person edits Fleet-managed ConfigMaps (Steward denies)", Phase: 1, Verb: "update", User: bench.HumanUser, Denies: humanDenied,
		prepare: patches(bench.ConfigMapsGVR(), "human-cm", bench.AgentUser, bench.HumanUser, types.MergePatchType, asUnstructured(bench.FleetConfigMap),
			func(seq int) string { return fmt.Sprintf(`{"data":{"LOG_LEVEL":"debug-%d"}}`, seq) }),
	},
	{
		Name: "fleet-deployment-update-human", Short: "Deploy update (person)", Title: "A person changes the image of Fleet-managed Deployments (Steward denies)", Phase: 1, Verb: "update", User: bench.HumanUser, Denies: humanDenied,
		prepare: patches(bench.DeploymentsGVR(), "human-web", bench.AgentUser, bench.HumanUser, types.StrategicMergePatchType, asUnstructured(bench.FleetDeployment), func(seq int) string {
			return fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.example.com/shop/web:hotfix-%d"}]}}}}`, seq)
		}),
	},
	{
		Name: "plain-configmap-create-human", Short: "CM create (unmarked)", Title: "A person creates ConfigMaps no GitOps tool marks (every webhook's match conditions let them by)", Phase: 1, Verb: "create", User: bench.HumanUser,
		prepare: creates(func(ctx context.Context, b *loadRun, w, seq int) error {
			_, err := b.c.users[bench.HumanUser].Kube.CoreV1().ConfigMaps(bench.FleetNamespace).Create(ctx, plainConfigMap(fmt.Sprintf("plain-%s-%d-%d", b.nonce, w, seq), "plain-create"), metav1.CreateOptions{})
			return err
		}),
		cleanup: deleteMarked(bench.ConfigMapsGVR(), bench.FleetNamespace, "plain-create"),
	},
	{
		Name: "plain-configmap-update-human", Short: "CM update (unmarked)", Title: "A person edits ConfigMaps no GitOps tool marks", Phase: 1, Verb: "update", User: bench.HumanUser,
		prepare: patches(bench.ConfigMapsGVR(), "plain-cm", bench.HumanUser, bench.HumanUser, types.MergePatchType,
			asUnstructured(func(name string) *corev1.ConfigMap { return plainConfigMap(name, "plain-update") }),
			func(seq int) string { return fmt.Sprintf(`{"data":{"LOG_LEVEL":"debug-%d"}}`, seq) }),
	},
	{
		Name: "claim-create", Short: "claim create", Title: "A developer creates Crossplane claims (PostgreSQLInstance), large caches present", Phase: 2, Verb: "create", User: bench.HumanUser,
		prepare: creates(func(ctx context.Context, b *loadRun, w, seq int) error {
			_, err := b.c.users[bench.HumanUser].Dyn.Resource(bench.ClaimGVR()).Namespace(bench.ClaimsNamespace).Create(ctx, bench.Claim(fmt.Sprintf("db-%s-%d-%d", b.nonce, w, seq)), metav1.CreateOptions{})
			return err
		}),
		cleanup: deleteMarked(bench.ClaimGVR(), bench.ClaimsNamespace, "claim-create"),
	},
	{
		Name: "managed-create", Short: "MR create", Title: "Crossplane composes managed resources (provider-sql Databases with an external name), large caches present", Phase: 2, Verb: "create", User: bench.CrossplaneUser,
		prepare: creates(func(ctx context.Context, b *loadRun, w, seq int) error {
			xr, claimName := b.mix.Composite(w*7919 + seq)
			mr := bench.ComposedMR("Database", fmt.Sprintf("%s-%s-%d-%d", xr, b.nonce, w, seq), xr, claimName, "database")
			_ = unstructured.SetNestedField(mr.Object, "managed-create", "metadata", "labels", bench.Label)
			mr.SetFinalizers(nil) // no provider runs to remove it, and the cleanup must delete them
			_, err := b.c.users[bench.CrossplaneUser].Dyn.Resource(bench.MRResources()["Database"]).Create(ctx, mr, metav1.CreateOptions{})
			return err
		}),
		cleanup: deleteMarked(bench.MRResources()["Database"], "", "managed-create"),
	},
	{
		Name: "helmrelease-update-v2beta1", Short: "HelmRelease v2beta1", Title: "Kustomize-controller applies HelmReleases written as v2beta1 (deprecated)", Phase: 2, Verb: "update", User: bench.FluxUser,
		// Created as v2 by the admin, written through v2beta1.
		prepare: patches(bench.HelmReleaseV2beta1GVR(), "bench-hr", "", bench.FluxUser, types.MergePatchType, func(name string) *unstructured.Unstructured { return bench.FluxObject("HelmRelease", name, false) },
			func(seq int) string { return fmt.Sprintf(`{"spec":{"values":{"replicaCount":%d}}}`, seq) }),
	},
	{
		Name: "flux-event-create", Short: "Flux Event", Title: "Kustomize-controller records Events about Kustomizations (every other one suspended)", Phase: 2, Verb: "create", User: bench.FluxUser,
		prepare: creates(func(ctx context.Context, b *loadRun, w, seq int) error {
			ks := b.mix.Kustomization(w + seq)
			_, err := b.c.users[bench.FluxUser].Kube.CoreV1().Events(bench.FluxNamespace).Create(ctx, bench.FluxEvent(ks, w*1_000_000+seq), metav1.CreateOptions{})
			return err
		}),
		// No cleanup: it is the last workload, and a cluster expires
		// Events by itself.
	},
}

// plainConfigMap is the Fleet workloads' ConfigMap without anything a
// GitOps tool writes: only the load run's own label, mark.
func plainConfigMap(name, mark string) *corev1.ConfigMap {
	cm := bench.FleetConfigMap(name)
	cm.Labels, cm.Annotations, cm.ManagedFields = map[string]string{bench.Label: mark}, nil, nil
	return cm
}

// patches is a prepare for updates. Each writer has an object of its own,
// which owner creates first, and patches it as user with patch(seq), as
// Helm (the Fleet agent), kubectl and Flux write: the API server turns a
// patch into an update that admission sees whole.
func patches(res schema.GroupVersionResource, prefix, owner, user string, pt types.PatchType, newObj func(string) *unstructured.Unstructured, patch func(seq int) string) func(context.Context, *loadRun, int) ([]op, error) {
	created := 0
	return func(ctx context.Context, b *loadRun, writers int) ([]op, error) {
		for ; created < writers; created++ {
			obj := newObj(fmt.Sprintf("%s-%d", prefix, created)) // through its own version
			at := schema.GroupVersionResource{Group: res.Group, Version: obj.GroupVersionKind().Version, Resource: res.Resource}
			if _, err := b.c.users[owner].Dyn.Resource(at).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				return nil, fmt.Errorf("creating the objects to update: %w", err)
			}
		}
		c := b.c.users[user].Dyn.Resource(res).Namespace(newObj("").GetNamespace())
		return perWriter(writers, func(w int) op {
			return func(ctx context.Context, seq int) error {
				_, err := c.Patch(ctx, fmt.Sprintf("%s-%d", prefix, w), pt, []byte(patch(seq)), metav1.PatchOptions{})
				return err
			}
		}), nil
	}
}

// asUnstructured converts a typed object for patches.
func asUnstructured[T runtime.Object](f func(string) T) func(string) *unstructured.Unstructured {
	return func(name string) *unstructured.Unstructured {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(f(name))
		if err != nil {
			panic(err) // typed fixtures always convert
		}
		return &unstructured.Unstructured{Object: m}
	}
}
