package webhooks

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/argocdguard"
	"github.com/stewardhq/steward/webhooks/fleetguard"
	"github.com/stewardhq/steward/webhooks/fluxguard"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/rule"
)

// BenchmarkGitOpsGuardsRefusedEdit compares the CPU the three GitOps
// guards spend refusing the same hand edit: one Deployment carrying
// Fleet's, Flux's and Argo CD's markers, whose image a person changes.
// Every guard reads the same bytes, so the shared cost (decoding,
// comparing, the message) is equal and the ratios show what each
// resolver adds: Fleet reads the object alone, Flux looks its
// Kustomization's inventory up, Argo CD parses the tracking id and looks
// its Application's status.resources up.
//
// A shared machine's speed drifts over seconds, so the guards are timed
// in paired rounds: each round times gitOpsRoundIterations decisions of
// every guard back to back, in an order that rotates from round to
// round, and yields one ratio per guard against Fleet. The benchmark
// reports the median ratio over the rounds and the spread (max-min) as a
// measure of the noise, and the median nanoseconds per decision of each
// guard; ns/op is suppressed (it would be a round's). Run with:
//
//	go test -run '^$' -bench GitOpsGuardsRefusedEdit -benchtime 1x ./webhooks/
func BenchmarkGitOpsGuardsRefusedEdit(b *testing.B) {
	const rounds = 15
	guards := []struct {
		name string
		rule rule.Rule
	}{
		{"fleet", fleetguard.New(fleetguard.Config{}, "steward:break-glass")},
		{"flux", fluxguard.New(fluxguard.Config{}, "steward:break-glass").WithOwners(ownersOf(b, fluxguard.KeepOwner, fluxApps))},
		{"argo", argocdguard.New(argocdguard.Config{}, "steward:break-glass").WithApplications(ownersOf(b, argocdguard.KeepApplication, argoGuestbook))},
	}
	req := threeToolImageChange(b)
	ctx := context.Background()
	for _, g := range guards {
		if got := ruletest.Judge(ctx, g.rule, req); got.Allowed {
			b.Fatalf("%s allows the edit (%v): the benchmark would time a path other than a refusal", g.name, got.Result)
		} else if testing.Verbose() {
			b.Logf("%s: %s", g.name, got.Result.Message)
		}
	}
	iterations := gitOpsRoundIterations * b.N
	rr := new(rule.Request)
	perDecision := make([][]float64, len(guards))
	ratios := make([][]float64, len(guards))
	b.ResetTimer()
	for round := range rounds {
		elapsed := make([]time.Duration, len(guards))
		for i := range guards {
			g := (round + i) % len(guards)
			b.StopTimer()
			runtime.GC() // each guard starts on a clean heap, not another's garbage
			b.StartTimer()
			start := time.Now()
			for range iterations {
				rr.Reset(req)
				_ = guards[g].rule.Handle(ctx, rr)
			}
			elapsed[g] = time.Since(start)
		}
		for g := range guards {
			perDecision[g] = append(perDecision[g], float64(elapsed[g].Nanoseconds())/float64(iterations))
			ratios[g] = append(ratios[g], float64(elapsed[g])/float64(elapsed[0]))
		}
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	for g, guard := range guards {
		b.ReportMetric(median(perDecision[g]), guard.name+"-ns/decision")
		if g == 0 {
			continue
		}
		b.ReportMetric(median(ratios[g]), guard.name+"/fleet")
		b.ReportMetric(slices.Max(ratios[g])-slices.Min(ratios[g]), guard.name+"/fleet-spread")
	}
}

// gitOpsRoundIterations is how many decisions of each guard a round
// times: 15 rounds of three guards take about twelve seconds on a busy
// two-core machine.
const gitOpsRoundIterations = 4000

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// threeToolDeployment is admissiontest.FleetDeployment with Flux's
// kustomize-controller labels and Argo CD's tracking id added: each guard
// finds its own tool's markers on the same object.
func threeToolDeployment(edits ...func(map[string]any)) []byte {
	var o map[string]any
	if err := json.Unmarshal([]byte(admissiontest.FleetDeployment), &o); err != nil {
		panic(err)
	}
	md := o["metadata"].(map[string]any)
	labels, annotations := md["labels"].(map[string]any), md["annotations"].(map[string]any)
	labels[fluxguard.LabelKustomizationName] = "apps"
	labels[fluxguard.LabelKustomizationNamespace] = "flux-system"
	annotations[argocdguard.AnnotationTrackingID] = "guestbook:apps/Deployment:default/web"
	for _, e := range edits {
		e(o)
	}
	data, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return data
}

// threeToolImageChange is kubectl set image of that Deployment by a
// person, as the API server sends it: new image, new generation, and
// kubectl's managedFields entry.
func threeToolImageChange(b *testing.B) admission.Request {
	b.Helper()
	changed := threeToolDeployment(func(o map[string]any) {
		spec := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		spec["containers"].([]any)[0].(map[string]any)["image"] = "ghcr.io/example/web:1.5.0"
		md := o["metadata"].(map[string]any)
		md["generation"] = 4
		md["managedFields"] = append(md["managedFields"].([]any), map[string]any{
			"manager": "kubectl-set", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-01-12T10:00:00Z", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:spec": map[string]any{"f:containers": map[string]any{
				`k:{"name":"web"}`: map[string]any{"f:image": map[string]any{}}}}}}},
		})
	})
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	return admissiontest.Update(gvr, "Deployment", threeToolDeployment(), changed).Build()
}

// fluxApps is Kustomization flux-system/apps, which applied the
// Deployment, as the API server sends it.
const fluxApps = `{
  "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
  "kind": "Kustomization",
  "metadata": {"name": "apps", "namespace": "flux-system", "resourceVersion": "7781", "generation": 2},
  "spec": {"interval": "10m", "path": "./apps", "prune": true, "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
  "status": {
    "lastAppliedRevision": "main@sha1:4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b",
    "inventory": {"entries": [
      {"id": "default_web_apps_Deployment", "v": "v1"},
      {"id": "default_web__Service", "v": "v1"},
      {"id": "default_web-config__ConfigMap", "v": "v1"}
    ]}
  }
}`

// argoGuestbook is Application argocd/guestbook, which synced the
// Deployment, as the API server sends it.
const argoGuestbook = `{
  "apiVersion": "argoproj.io/v1alpha1",
  "kind": "Application",
  "metadata": {"name": "guestbook", "namespace": "argocd", "resourceVersion": "90211", "generation": 14},
  "spec": {
    "project": "default",
    "source": {"repoURL": "https://github.com/example/apps", "path": "guestbook", "targetRevision": "HEAD"},
    "destination": {"server": "https://kubernetes.default.svc", "namespace": "default"},
    "syncPolicy": {"automated": {"prune": true, "selfHeal": true}}
  },
  "status": {
    "sync": {"status": "Synced", "revision": "4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b"},
    "resources": [
      {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "default", "name": "web", "status": "Synced"},
      {"version": "v1", "kind": "Service", "namespace": "default", "name": "web", "status": "Synced"},
      {"version": "v1", "kind": "ConfigMap", "namespace": "default", "name": "web-config", "status": "Synced"}
    ]
  }
}`

// fakeOwners is an owners' cache holding what a rule's informer transform
// keeps of each owner, by resource, namespace and name.
type fakeOwners map[schema.GroupResource]map[string]any

var _ gitops.OwnerCache = fakeOwners(nil)

// ownersOf caches the owners given as JSON through keep, decoded as an
// informer decodes them.
func ownersOf(b *testing.B, keep func(any) (any, error), owners ...string) fakeOwners {
	b.Helper()
	f := fakeOwners{}
	for _, s := range owners {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(s)); err != nil {
			b.Fatal(err)
		}
		kept, err := keep(u)
		if err != nil {
			b.Fatal(err)
		}
		gvk := u.GroupVersionKind()
		gr := schema.GroupResource{Group: gvk.Group, Resource: map[string]string{
			"Kustomization": "kustomizations", "HelmRelease": "helmreleases", "Application": "applications"}[gvk.Kind]}
		if f[gr] == nil {
			f[gr] = map[string]any{}
		}
		f[gr][u.GetNamespace()+"/"+u.GetName()] = kept
	}
	return f
}

func (f fakeOwners) Lookup(gr schema.GroupResource, namespace, name string) (any, bool, error) {
	o, ok := f[gr][namespace+"/"+name]
	return o, ok, nil
}

func (f fakeOwners) List(gr schema.GroupResource) ([]any, error) {
	var out []any
	for _, o := range f[gr] {
		out = append(out, o)
	}
	return out, nil
}
