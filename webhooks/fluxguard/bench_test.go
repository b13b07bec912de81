package fluxguard

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
)

// Benchmarks of the handler on the podinfo Deployment, against an
// allow-all handler as the baseline, and of the owners' cache. Run with:
// go test -run '^$' -bench . -benchmem ./webhooks/fluxguard/

// benchmark times h on req, which it allows or refuses as allowed says.
var benchmark = gitopstest.Benchmark

// imageChange is a kubectl set image of the podinfo Deployment as the API
// server sends it: the writer already recorded in managedFields and the
// generation bumped, so the metadata differs as on every real update.
func imageChange() *admissiontest.Request {
	return admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage(set(7, "metadata", "generation"),
		func(o map[string]any) {
			md := at(o, "metadata")
			md["managedFields"] = append(md["managedFields"].([]any), map[string]any{
				"manager": "kubectl-set", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-11-27T10:00:00Z", "fieldsType": "FieldsV1",
				"fieldsV1": map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:spec": map[string]any{"f:containers": map[string]any{
					`k:{"name":"podinfod"}`: map[string]any{"f:image": map[string]any{}}}}}}},
			})
		}))
}

func BenchmarkFluxguardAllowAllBaseline(b *testing.B) {
	benchmark(b, ruletest.AllowAll{}, imageChange().Build(), true)
}

// Flux's controllers never reach Steward (matchConditions); this is what
// one costs if a configuration sends it anyway.
func BenchmarkFluxguardAgentUpdate(b *testing.B) {
	benchmark(b, defaultRule(), imageChange().User(kustomizeController, "system:serviceaccounts", "system:serviceaccounts:flux-system").Build(), true)
}

func BenchmarkFluxguardHumanImageChange(b *testing.B) {
	benchmark(b, defaultRule(), imageChange().Build(), false)
}

// An operator's annotation on the pod template, under its own field
// manager: a field Git does not declare, allowed. It must cost no more
// than a refusal.
func BenchmarkFluxguardOperatorAnnotation(b *testing.B) {
	req := admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), obj(podinfoDeployment, set(7, "metadata", "generation"),
		set("2026-11-27T10:00:00Z", "spec", "template", "metadata", "annotations", "reloader.example.com/last-reload"),
		func(o map[string]any) {
			md := at(o, "metadata")
			md["managedFields"] = append(md["managedFields"].([]any), map[string]any{
				"manager": "reloader", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-11-27T10:00:00Z", "fieldsType": "FieldsV1",
				"fieldsV1": map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:metadata": map[string]any{"f:annotations": map[string]any{
					"f:reloader.example.com/last-reload": map[string]any{}}}}}},
			})
		}))
	benchmark(b, defaultRule(), req.User("system:serviceaccount:ops:reloader", "system:serviceaccounts").Build(), true)
}

func BenchmarkFluxguardTenantUpdate(b *testing.B) {
	req := admissiontest.Update(deploymentsGVR, "Deployment", deployment("team-a", "web", "team-a/frontend"),
		deployment("team-a", "web", "team-a/frontend", image(0, "nginx:1.27"))).User("system:serviceaccount:team-a:flux-reconciler").Build()
	benchmark(b, defaultRule(), req, true)
}

func BenchmarkFluxguardHumanDelete(b *testing.B) {
	benchmark(b, defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(podinfoDeployment)).Build(), false)
}

func BenchmarkFluxguardSpoofedCreate(b *testing.B) {
	benchmark(b, defaultRule(), admissiontest.Create(deploymentsGVR, "Deployment", obj(podinfoDeployment)).Build(), false)
}

// A scale request finds its owners by searching every inventory: here
// those of 1,000 Kustomizations listing 100,000 objects.
func BenchmarkFluxguardHumanScaleLargeCluster(b *testing.B) {
	r := New(Config{}, breakGlass).WithOwners(cacheHolding(buildOwners(largeCluster)...))
	// The last Kustomization's first Deployment.
	ns, name := largeCluster.object(largeCluster.owners()-1, 0)
	benchmark(b, r, scaleRequest(deploymentsGVR, ns, name, 2, 5).Build(), false)
}

// clusterShape is a cluster's Flux owners: how many Kustomizations and
// HelmReleases, and how many inventory entries they list in all.
type clusterShape struct {
	name                         string
	kustomizations, helmReleases int
	entries                      int
}

var (
	// largeCluster is a large multi-tenant cluster: 1,000 Kustomizations
	// listing 100,000 objects.
	largeCluster = clusterShape{name: "100kEntries1000Kustomizations", kustomizations: 1000, entries: 100_000}
	// homeOps is a home-ops repository's cluster: 150 Kustomizations and
	// HelmReleases (one Kustomization per app, which applies its
	// HelmRelease), 3,000 objects in all.
	homeOps = clusterShape{name: "HomeOps150Owners3000Entries", kustomizations: 75, helmReleases: 75, entries: 3000}
)

func (s clusterShape) owners() int { return s.kustomizations + s.helmReleases }

// inventoryKinds are the kinds Flux applies, in the mix ids are made of:
// core and named groups, namespaced and cluster-scoped, and RBAC.
var inventoryKinds = []struct {
	group, kind   string
	clusterScoped bool
}{
	{"apps", "Deployment", false},
	{"", "Service", false},
	{"", "ConfigMap", false},
	{"", "ServiceAccount", false},
	{"networking.k8s.io", "Ingress", false},
	{"monitoring.coreos.com", "ServiceMonitor", false},
	{"external-secrets.io", "ExternalSecret", false},
	{"apps", "StatefulSet", false},
	{"policy", "PodDisruptionBudget", false},
	{"rbac.authorization.k8s.io", "RoleBinding", false},
	{"rbac.authorization.k8s.io", "ClusterRole", true},
	{"", "PersistentVolumeClaim", false},
}

// object is the namespace and name of owner i's j-th object, as its
// inventory id has them (a Deployment's, for j = 0).
func (s clusterShape) object(i, j int) (namespace, name string) {
	return fmt.Sprintf("team-%03d", i%200), fmt.Sprintf("podinfo-%d", i*s.entries/s.owners()+j)
}

// ownerObject is owner i of the shape as the informer decodes the API
// server's answer: a Kustomization or a HelmRelease with its spec,
// conditions and inventory.
func (s clusterShape) ownerObject(i int) *unstructured.Unstructured {
	per := s.entries / s.owners()
	if i < s.entries%s.owners() {
		per++
	}
	entries := make([]any, per)
	for j := range entries {
		ns, name := s.object(i, j)
		k := inventoryKinds[j%len(inventoryKinds)]
		if j > 0 {
			name = fmt.Sprintf("%s-%s", name, []string{"web", "worker", "cache", "metrics"}[j%4])
		}
		if k.clusterScoped {
			ns = ""
		}
		if k.group == "rbac.authorization.k8s.io" {
			// "<name>:view", its ":" written "__" as Flux writes it.
			name += "__view"
		}
		entries[j] = map[string]any{"id": ns + "_" + name + "_" + k.group + "_" + k.kind, "v": "v1"}
	}
	ns := fmt.Sprintf("team-%03d", i%200)
	meta := map[string]any{
		"name": fmt.Sprintf("app-%04d", i), "namespace": ns,
		"uid":             fmt.Sprintf("0b1c2d3e-4f50-6172-8394-a5b6c7%06d", i),
		"resourceVersion": fmt.Sprint(900000 + i), "generation": int64(3),
		"finalizers": []any{"finalizers.fluxcd.io"},
		"labels":     map[string]any{LabelKustomizationName: "flux-system", LabelKustomizationNamespace: "flux-system"},
	}
	conditions := []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
		"message": "Applied revision: main@sha1:1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d", "lastTransitionTime": "2026-11-27T09:41:07Z"}}
	if i >= s.kustomizations {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": meta,
			"spec": map[string]any{"interval": "30m", "driftDetection": map[string]any{"mode": "enabled"},
				"chart":  map[string]any{"spec": map[string]any{"chart": "app-template", "version": "3.x", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "bjw-s", "namespace": "flux-system"}}},
				"values": map[string]any{"controllers": map[string]any{"main": map[string]any{"containers": map[string]any{"app": map[string]any{"image": map[string]any{"repository": "ghcr.io/example/app", "tag": "1.0.0"}}}}}}},
			"status": map[string]any{"observedGeneration": int64(3), "conditions": conditions, "lastAttemptedRevision": "3.5.1",
				"history":   []any{map[string]any{"name": meta["name"], "namespace": ns, "version": int64(4), "status": "deployed", "chartName": "app-template", "chartVersion": "3.5.1"}},
				"inventory": map[string]any{"entries": entries}},
		}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": meta,
		"spec": map[string]any{"interval": "10m", "path": fmt.Sprintf("./kubernetes/apps/%s/app-%04d", ns, i), "prune": true, "wait": false,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system", "namespace": "flux-system"}},
		"status": map[string]any{"observedGeneration": int64(3), "conditions": conditions,
			"lastAppliedRevision": "main@sha1:1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d", "lastAttemptedRevision": "main@sha1:1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d",
			"inventory": map[string]any{"entries": entries}},
	}}
}

// buildOwners passes each of the shape's owners through keepOwner.
func buildOwners(s clusterShape) []*owner {
	out := make([]*owner, s.owners())
	for i := range out {
		kept, err := keepOwner(s.ownerObject(i))
		if err != nil {
			panic(err)
		}
		out[i] = kept.(*owner)
	}
	return out
}

// ownersHeap is the live heap that the shape's owners hold in an
// informer's store, as keepOwner keeps them, built one at a time, as the
// informer receives them, so that the decoded objects are garbage by the
// time the heap is read.
func ownersHeap(s clusterShape) int64 {
	return ruletest.HeapKept(func() any {
		store := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
		for i := range s.owners() {
			kept, err := keepOwner(s.ownerObject(i))
			if err != nil {
				panic(err)
			}
			if err := store.Add(kept); err != nil {
				panic(err)
			}
		}
		return store
	})
}

// BenchmarkFluxguardInventoryBytes measures the heap the owners' cache
// holds, per inventory entry and for the whole cluster (run with
// -benchtime=1x: each iteration builds the whole cache).
func BenchmarkFluxguardInventoryBytes(b *testing.B) {
	for _, s := range []clusterShape{largeCluster, homeOps} {
		b.Run(s.name, func(b *testing.B) {
			var kept int64
			for range b.N {
				kept = ownersHeap(s)
			}
			b.ReportMetric(float64(kept)/float64(s.entries), "B/entry")
			b.ReportMetric(float64(kept), "B/cluster")
		})
	}
}

// inventoryBudget is the documented budget of the owners' cache per
// inventory entry (README.md, "The cache").
const inventoryBudget = 128

// TestInventoryBytesPerEntry holds the large cluster's owners' cache to
// its budget. The heap is read after a collection, and other goroutines
// (the test runner's, the runtime's) may allocate meanwhile, so a
// measurement over budget is taken again a few times: the cache is what
// it is, only the noise varies.
func TestInventoryBytesPerEntry(t *testing.T) {
	var measured []float64
	for range 3 {
		perEntry := float64(ownersHeap(largeCluster)) / float64(largeCluster.entries)
		if perEntry <= inventoryBudget {
			t.Logf("%.1f B/entry (budget %d)", perEntry, inventoryBudget)
			return
		}
		measured = append(measured, perEntry)
	}
	t.Errorf("the owners' cache holds %.1f B per inventory entry (measured %d times), over the budget of %d", measured, len(measured), inventoryBudget)
}

func TestBenchmarkClustersAreShapedAsDocumented(t *testing.T) {
	// The benchmarks' numbers are quoted per entry and per cluster: check
	// the clusters hold what their names say, and that every id is found
	// where a request would look for it.
	for _, s := range []clusterShape{largeCluster, homeOps} {
		entries := 0
		for _, o := range buildOwners(s) {
			entries += o.inventory.Len()
		}
		if entries != s.entries {
			t.Errorf("%s: %d inventory entries, want %d", s.name, entries, s.entries)
		}
	}
	owners := buildOwners(homeOps)
	ns, name := homeOps.object(3, 0)
	if !owners[3].inventory.Has(ns + "_" + name + "_apps_Deployment") {
		t.Errorf("owner 3 does not list its Deployment %s/%s", ns, name)
	}
	if owners[100].kind != kindHelmRelease || owners[0].kind != kindKustomization {
		t.Errorf("home-ops owners are %s ... %s, want Kustomizations then HelmReleases", owners[0].kind, owners[100].kind)
	}
}
