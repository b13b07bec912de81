package argocdguard

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
)

// Benchmarks of the handler on a realistic Deployment, against an
// allow-all handler as the baseline, and of what the Applications' cache
// keeps. Run with: go test -run '^$' -bench . -benchmem ./webhooks/argocdguard/

// benchmark times h on req, which it allows or refuses as allowed says.
var benchmark = gitopstest.Benchmark

// benchImageChange is kubectl set image of the web Deployment as the API
// server sends it: the new object has a new generation and kubectl's
// managedFields entry.
func benchImageChange() *admissiontest.Request {
	imageField := map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:spec": map[string]any{"f:containers": map[string]any{
		`k:{"name":"web"}`: map[string]any{"f:image": map[string]any{}}}}}}}
	return admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
		obj(webDeployment, container(0, "image", "ghcr.io/example/web:1.5.0"), set(4, "metadata", "generation"),
			gitopstest.Written("kubectl-set", "2026-01-12T10:00:00Z", "", imageField)))
}

// clientSide makes the stored Deployment one Argo CD's default
// client-side apply wrote: its entry an Update, and the manifest it
// applied in kubectl's last-applied-configuration annotation, which the
// guard then reads Git's fields from.
func clientSide(o map[string]any) {
	md := at(o, "metadata")
	entries, _ := md["managedFields"].([]any)
	if e, ok := entries[0].(map[string]any); ok {
		e["operation"] = "Update"
	}
	manifest, err := json.Marshal(map[string]any{
		"apiVersion": o["apiVersion"], "kind": o["kind"],
		"metadata": map[string]any{"name": md["name"], "namespace": md["namespace"], "labels": md["labels"],
			"annotations": map[string]any{"argocd.argoproj.io/tracking-id": "guestbook:apps/Deployment:default/web"}},
		"spec": o["spec"],
	})
	if err != nil {
		panic(err)
	}
	at(md, "annotations")[gitops.LastAppliedAnnotation] = string(manifest)
}

// benchClientSideImageChange is benchImageChange of a Deployment Argo CD
// applied client-side.
func benchClientSideImageChange() *admissiontest.Request {
	imageField := map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:spec": map[string]any{"f:containers": map[string]any{
		`k:{"name":"web"}`: map[string]any{"f:image": map[string]any{}}}}}}}
	return admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment, clientSide),
		obj(webDeployment, clientSide, container(0, "image", "ghcr.io/example/web:1.5.0"), set(4, "metadata", "generation"),
			gitopstest.Written("kubectl-set", "2026-01-12T10:00:00Z", "", imageField)))
}

func BenchmarkArgocdguardHumanImageChangeClientSide(b *testing.B) {
	benchmark(b, defaultRule(), benchClientSideImageChange().Build(), false)
}

func BenchmarkArgocdguardAllowAllBaseline(b *testing.B) {
	benchmark(b, ruletest.AllowAll{}, benchImageChange().Build(), true)
}

func BenchmarkArgocdguardControllerUpdate(b *testing.B) {
	benchmark(b, defaultRule(), benchImageChange().User(argoController, "system:serviceaccounts", "system:serviceaccounts:argocd").Build(), true)
}

func BenchmarkArgocdguardHumanImageChange(b *testing.B) {
	benchmark(b, defaultRule(), benchImageChange().Build(), false)
}

func BenchmarkArgocdguardHumanDelete(b *testing.B) {
	benchmark(b, defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(webDeployment)).Build(), false)
}

func BenchmarkArgocdguardSpoofedCreate(b *testing.B) {
	benchmark(b, defaultRule(), admissiontest.Create(deploymentsGVR, "Deployment", obj(webDeployment)).Build(), false)
}

// A scale request searches every Application's status.resources: here
// 1,000 Applications of 100 entries each, the last of which lists the
// workload.
func BenchmarkArgocdguardHumanScaleAmong1000Applications(b *testing.B) {
	apps := make([]map[string]any, 0, benchApplications)
	for i := range benchApplications {
		apps = append(apps, benchApplication(i))
	}
	apps = append(apps, obj(guestbookApp, named("", "zz-guestbook")))
	benchmark(b, newRule(Config{}, apps...), scaleRequest("web", 3, 5).Build(), false)
}

const (
	benchApplications = 1000
	benchEntries      = 100
)

// benchKinds are what a team's Application commonly deploys.
var benchKinds = []struct{ group, version, kind, suffix string }{
	{"apps", "v1", "Deployment", ""}, {"", "v1", "Service", ""}, {"", "v1", "ConfigMap", "-config"},
	{"", "v1", "Secret", "-env"}, {"", "v1", "ServiceAccount", ""}, {"rbac.authorization.k8s.io", "v1", "Role", "-reader"},
	{"rbac.authorization.k8s.io", "v1", "RoleBinding", "-reader"}, {"autoscaling", "v2", "HorizontalPodAutoscaler", ""},
	{"networking.k8s.io", "v1", "Ingress", ""}, {"policy", "v1", "PodDisruptionBudget", ""},
}

// benchApplication is Application team-NNN/app-NNN (Applications in any
// namespace) listing benchEntries objects: ten components of ten kinds.
func benchApplication(i int) map[string]any {
	ns, name := fmt.Sprintf("team-%03d", i), fmt.Sprintf("app-%03d", i)
	resources := make([]any, 0, benchEntries)
	for j := range benchEntries {
		k := benchKinds[j%len(benchKinds)]
		e := map[string]any{"version": k.version, "kind": k.kind, "namespace": ns, "name": fmt.Sprintf("%s-component-%02d%s", name, j/len(benchKinds), k.suffix),
			"status": "Synced", "health": map[string]any{"status": "Healthy"}}
		if k.group != "" {
			e["group"] = k.group
		}
		resources = append(resources, e)
	}
	return obj(guestbookApp, named(ns, name), set(ns, "spec", "destination", "namespace"),
		set("apps/"+name, "spec", "source", "path"), set(resources, "status", "resources"))
}

// BenchmarkArgocdguardApplicationBytes measures the live heap the
// Applications' informer store holds per status.resources entry, for
// 100,000 entries over 1,000 Applications decoded as the informer decodes
// them, untrimmed and as keepApplication keeps them. Run with
// -benchtime=1x.
func BenchmarkArgocdguardApplicationBytes(b *testing.B) {
	blobs := make([][]byte, benchApplications)
	for i := range blobs {
		data, err := json.Marshal(benchApplication(i))
		if err != nil {
			b.Fatal(err)
		}
		blobs[i] = data
	}
	for _, tc := range []struct {
		name      string
		transform cache.TransformFunc
	}{{"Untrimmed", nil}, {"Trimmed", keepApplication}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				kept := ruletest.HeapKept(func() any {
					store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
					for _, data := range blobs {
						u := &unstructured.Unstructured{}
						if err := u.UnmarshalJSON(data); err != nil {
							b.Fatal(err)
						}
						var o any = u
						if tc.transform != nil {
							var err error
							if o, err = tc.transform(o); err != nil {
								b.Fatal(err)
							}
						}
						if err := store.Add(o); err != nil {
							b.Fatal(err)
						}
					}
					return store
				})
				b.ReportMetric(float64(kept)/(benchApplications*benchEntries), "B/entry")
			}
		})
	}
}
