package suspendnotice

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/stewardhq/steward/webhooks/internal/ruletest"
)

func TestKeepSuspension(t *testing.T) {
	full := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "apps", UID: "u1", ResourceVersion: "7",
			Labels:        map[string]string{"app": "web"},
			Annotations:   map[string]string{AnnotationSuspendedAt: "2026-01-01T00:00:00Z", AnnotationSuspendedBy: "alice", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			Finalizers:    []string{"finalizers.fluxcd.io"},
		},
	}
	want := metav1.ObjectMeta{
		Name: "web", Namespace: "apps", UID: "u1", ResourceVersion: "7",
		Annotations: map[string]string{AnnotationSuspendedAt: "2026-01-01T00:00:00Z", AnnotationSuspendedBy: "alice"},
	}
	got, err := keepSuspension(full)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := got.(*cachedFlux)
	if !ok {
		t.Fatalf("keepSuspension returned a %T, want a *cachedFlux", got)
	}
	if diff := cmp.Diff(want, c.objectMeta()); diff != "" {
		t.Errorf("keepSuspension keeps identity and the suspension record only: -want +got:\n%s", diff)
	}
	if !c.suspended() {
		t.Error("an object with suspended-at is suspended")
	}
	again, _ := keepSuspension(got)
	if again != got {
		t.Errorf("keepSuspension must be idempotent: got %#v from %#v", again, got)
	}
	// The informer's store keys it as it would the API server's object.
	for _, keyOf := range []cache.KeyFunc{cache.MetaNamespaceKeyFunc, cache.DeletionHandlingMetaNamespaceKeyFunc} {
		if key, err := keyOf(got); err != nil || key != "apps/web" {
			t.Errorf("the store keys the cached object %q (%v), want apps/web", key, err)
		}
	}

	noBy := full.DeepCopy()
	noBy.Annotations = map[string]string{AnnotationSuspendedAt: ""}
	slim, _ := keepSuspension(noBy)
	if a := slim.(*cachedFlux).GetAnnotations(); !cmp.Equal(a, map[string]string{AnnotationSuspendedAt: ""}) {
		t.Errorf("a record without suspended-by reads back without it; got %v", a)
	}
	if !slim.(*cachedFlux).suspended() {
		t.Error("an empty suspended-at still records a suspension")
	}

	notSuspended := full.DeepCopy()
	notSuspended.Annotations = map[string]string{"team": "web", AnnotationSuspendedBy: "alice"}
	slim, _ = keepSuspension(notSuspended)
	if a := slim.(*cachedFlux).GetAnnotations(); a != nil {
		t.Errorf("an object that is not suspended (no suspended-at) keeps no annotations, not even a stray suspended-by; got %v", a)
	}
	if slim.(*cachedFlux).suspended() {
		t.Error("an object without suspended-at is not suspended")
	}
}

func TestCachedFluxDeepCopyIsIndependent(t *testing.T) {
	got, _ := keepSuspension(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps",
		Annotations: map[string]string{AnnotationSuspendedAt: "t", AnnotationSuspendedBy: "alice"}}})
	c := got.(*cachedFlux)
	cp := c.DeepCopyObject().(*cachedFlux)
	cp.SetAnnotations(map[string]string{AnnotationSuspendedAt: "later"})
	cp.SetName("other")
	if c.GetName() != "web" || c.suspension.at != "t" || c.suspension.by != "alice" {
		t.Errorf("changing a deep copy changed the original: %#v %#v", c, c.suspension)
	}
}

// BenchmarkFluxCacheBytes measures the heap one cached Flux object holds
// in an informer's store, a quarter of them suspended (bytes/object; run
// with -benchtime=1x).
func BenchmarkFluxCacheBytes(b *testing.B) {
	const n = 10_000
	for i := 0; i < b.N; i++ {
		kept := ruletest.HeapKept(func() any {
			store := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
			for j := 0; j < n; j++ {
				// Built here, as the informer decodes each object; what
				// the store does not keep is garbage by the end.
				o, _ := keepSuspension(fluxMeta(j))
				if err := store.Add(o); err != nil {
					b.Fatal(err)
				}
			}
			return store
		})
		b.ReportMetric(float64(kept)/n, "bytes/object")
	}
}

// fluxMeta is the metadata of the j-th Flux object as the metadata
// informer decodes it; every fourth is suspended.
func fluxMeta(j int) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("scale-kustomization-%06d", j), Namespace: fmt.Sprintf("team-%02d", j%20),
		UID: types.UID(fmt.Sprintf("0b1c2d3e-4f50-6172-8394-a5b6c7%06d", j)), ResourceVersion: fmt.Sprint(100000 + j),
		Labels:      map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps"},
		Annotations: map[string]string{"kustomize.toolkit.fluxcd.io/checksum": "4f3a9c1e"},
	}}
	if j%4 == 2 {
		m.Annotations[AnnotationSuspendedAt] = "2026-11-25T10:00:00Z"
		m.Annotations[AnnotationSuspendedBy] = "alice@example.com"
	}
	return m
}
