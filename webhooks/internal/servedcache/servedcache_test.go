package servedcache

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

var kustomizations = schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"}

func kustomization(ns, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
	}
}

func newTestSet(t *testing.T, served *atomic.Bool) *Set {
	t.Helper()
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, []runtime.Object{kustomization("apps", "web")}...)
	discover := func(context.Context) ([]*metav1.APIResourceList, error) {
		if !served.Load() {
			return []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods"}}}}, nil
		}
		return []*metav1.APIResourceList{{GroupVersion: "kustomize.toolkit.fluxcd.io/v1", APIResources: []metav1.APIResource{{Name: "kustomizations"}}}}, nil
	}
	newInformer := func(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
		return metadatainformer.NewFilteredMetadataInformer(client, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	}
	return New("test", []schema.GroupResource{kustomizations}, discover, newInformer, 10*time.Millisecond, logr.Discard())
}

func start(t *testing.T, s *Set) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestReadyWithoutTheCRDAndStartsWhenItAppears(t *testing.T) {
	var served atomic.Bool
	s := newTestSet(t, &served)
	if err := s.Ready(nil); err == nil {
		t.Fatal("Ready before the first discovery: want an error, got nil")
	}
	start(t, s)
	eventually(t, "ready without the CRD", func() bool { return s.Ready(nil) == nil })
	if _, ok := s.Get(kustomizations, "apps", "web"); ok {
		t.Fatal("Get on a resource that is not served: want not found")
	}

	served.Store(true)
	eventually(t, "the informer starts once the CRD is served", func() bool { return s.Watching(kustomizations) })
	eventually(t, "the object is found once the informer synced", func() bool {
		_, ok := s.Get(kustomizations, "apps", "web")
		return ok
	})
	if err := s.Ready(nil); err != nil {
		t.Fatalf("a resource that appeared later must not affect readiness: %v", err)
	}
}

func TestServedAtStartGatesReadiness(t *testing.T) {
	var served atomic.Bool
	served.Store(true)
	s := newTestSet(t, &served)
	start(t, s)
	eventually(t, "ready once the informer synced", func() bool { return s.Ready(nil) == nil })
	if !s.Watching(kustomizations) {
		t.Fatal("a resource served at start must be watched")
	}
	if _, ok := s.Get(kustomizations, "apps", "web"); !ok {
		t.Fatal("ready, but the stored object is not found")
	}
	if _, ok := s.Get(kustomizations, "apps", "other"); ok {
		t.Fatal("an absent object must not be found")
	}
}

func TestServedVersionsSkipsMalformedLists(t *testing.T) {
	got := servedVersions([]*metav1.APIResourceList{
		nil,
		{GroupVersion: "a/b/c", APIResources: []metav1.APIResource{{Name: "x"}}},
		{GroupVersion: "source.toolkit.fluxcd.io/v1", APIResources: []metav1.APIResource{{Name: "gitrepositories"}}},
	})
	want := schema.GroupResource{Group: "source.toolkit.fluxcd.io", Resource: "gitrepositories"}
	if len(got) != 1 || got[want] != "v1" {
		t.Fatalf("servedVersions = %v, want only %s at v1", got, want)
	}
}
