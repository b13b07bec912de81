package fluxguard

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
	"github.com/stewardhq/steward/webhooks/object"
)

// fuzzSeeds are committed seeds for the objects of a request: realistic
// ones, Flux's labels and markers of the wrong shape, odd JSON, and
// deeply nested input.
var fuzzSeeds = []string{
	podinfoDeployment,
	`{}`,
	`{"metadata": {"labels": {"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}}}`,
	`{"metadata": {"labels": {"helm.toolkit.fluxcd.io/name": "podinfo", "helm.toolkit.fluxcd.io/namespace": "podinfo"}, "annotations": {"meta.helm.sh/release-name": 1}}}`,
	`{"metadata": {"labels": {"kustomize.toolkit.fluxcd.io/name": 1}}}`,
	`{"metadata": {"labels": {"kustomize.toolkit.fluxcd.io/name": "", "kustomize.toolkit.fluxcd.io/namespace": ""}}}`,
	`{"metadata": {"name": "podinfo:reader", "labels": {"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, "annotations": {"kustomize.toolkit.fluxcd.io/reconcile": "DISABLED"}}}`,
	`{"metadata": {"labels": {"kustomize.toolkit.fluxcd.io/name": "platform", "kustomize.toolkit.fluxcd.io/namespace": "flux-system", "app.kubernetes.io/part-of": "mesh"}, "ownerReferences": [{"kind": "X", "name": "y"}]}}`,
	`{"metadata": null, "spec": [1, "2", {"3": null}]}`,
	`{"spec": {"replicas": 9007199254740993}}`,
	`{"spec": {"replicas": "many"}}`,
	`[]`, `null`, `"string"`, `{`, ``,
	nested(5000, `1`),
	strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000),
}

// FuzzHandle runs whole requests with arbitrary objects through the
// handler, against the test cluster's owners: it must answer, never
// panic.
func FuzzHandle(f *testing.F) {
	for _, s := range fuzzSeeds {
		for op := range gitopstest.FuzzOps {
			f.Add(s, podinfoDeployment, op)
			f.Add(podinfoDeployment, s, op)
		}
	}
	r := optOutRule()
	f.Fuzz(func(t *testing.T, oldObj, newObj string, op uint8) {
		req := gitopstest.FuzzRequest(op, oldObj, newObj)
		if op%gitopstest.FuzzOps == gitopstest.FuzzScale {
			// The owners' inventories list the workload in apps.
			req.Namespace("apps")
		}
		gitopstest.CheckAnswers(t, r, req)
	})
}

// ownerSeeds are committed seeds for FuzzKeepOwner: Flux's objects as the
// API server sends them, and the same fields of the wrong shape.
var ownerSeeds = []string{
	appsKustomization,
	podinfoHelmRelease,
	promStackHelmRelease,
	`{"kind": "Kustomization"}`,
	`{"kind": "HelmRelease", "spec": {"releaseName": "` + strings.Repeat("x", 80) + `", "targetNamespace": 1}}`,
	`{"kind": "Kustomization", "status": {"inventory": {"entries": null}}}`,
	`{"kind": "Kustomization", "status": {"inventory": {"entries": [1, {"id": 2}, {"id": "a_b__C"}, {"id": "a_b__C"}]}}}`,
	`{"kind": "Kustomization", "status": {"inventory": []}}`,
	`{"kind": "Kustomization", "spec": {"ignore": [{"paths": ["/a", "b", "", 3], "target": {"kind": "(", "labelSelector": "a in (b"}}, {"paths": ["/x"], "target": null}, 7]}}`,
	`{"kind": "HelmRelease", "spec": {"chart": {"spec": {"chart": "c", "sourceRef": "s"}}, "driftDetection": {"mode": 1, "ignore": {"paths": []}}}, "status": {"history": ["x"]}}`,
	`{"kind": "HelmRelease", "spec": {"chartRef": {"kind": 1}}, "status": {"lastAttemptedRevision": "main@sha1:", "history": []}}`,
	`{"kind": 1, "metadata": {"name": 1, "namespace": ["x"]}, "spec": {"suspend": "true", "interval": 5}}`,
	`{"kind": "Kustomization", "status": {"lastAppliedRevision": "sha256:sha1:0123456789"}}`,
	`{}`,
}

// FuzzKeepOwner passes arbitrary JSON, decoded as the informer decodes
// the API server's answer, through the cache's transform: it must never
// panic, and must keep what it already kept as it is (client-go may pass
// a stored object through the transform again), without copying it.
func FuzzKeepOwner(f *testing.F) {
	for _, s := range ownerSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]any
		if utiljson.Unmarshal([]byte(s), &m) != nil || m == nil {
			return
		}
		once, err := keepOwner(&unstructured.Unstructured{Object: m})
		if err != nil {
			t.Fatalf("keepOwner of an unstructured object: %v", err)
		}
		o, ok := once.(*owner)
		if !ok {
			t.Fatalf("keepOwner kept a %T, want *owner", once)
		}
		twice, err := keepOwner(once)
		if err != nil {
			t.Fatalf("keepOwner of its own output: %v", err)
		}
		if twice != once {
			t.Errorf("keepOwner(keepOwner(x)) is a different object: %p, want %p", twice, once)
		}
		// Whatever was kept must be readable by a decision and a scale
		// lookup.
		r := newResolver(Config{OptOutGroups: []string{"platform-admins"}})
		ref := gitops.Ref{Namespace: "apps", Name: "podinfo"}
		ref.Group, ref.Version, ref.Kind = "apps", "v1", "Deployment"
		_ = r.ownerFor(o, ref, object.New([]byte(podinfoDeployment)))
		_ = o.inventory.Has(gitops.InventoryID("apps", "podinfo", "apps", "Deployment"))
	})
}

func TestKeepOwnerRejectsOtherTypes(t *testing.T) {
	// Only the API server's objects and the transform's own output are
	// expected; anything else is an error the informer logs, not a
	// panic.
	if _, err := keepOwner(map[string]any{"kind": "Kustomization"}); err == nil {
		t.Error("keepOwner accepted a plain map")
	}
}

// nested returns {"a": {"a": ... leaf}} n levels deep.
func nested(n int, leaf string) string {
	return strings.Repeat(`{"a": `, n) + leaf + strings.Repeat(`}`, n)
}
