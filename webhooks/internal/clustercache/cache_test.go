package clustercache

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"
)

// fakeDiscovery serves resource lists a test may change.
type fakeDiscovery struct {
	mu      sync.Mutex
	lists   []*metav1.APIResourceList
	failing []schema.GroupVersion
	calls   int
}

func (f *fakeDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	var err error
	if len(f.failing) > 0 {
		failed := map[schema.GroupVersion]error{}
		for _, gv := range f.failing {
			failed[gv] = errors.New("unavailable")
		}
		err = &discovery.ErrGroupDiscoveryFailed{Groups: failed}
	}
	return nil, append([]*metav1.APIResourceList(nil), f.lists...), err
}

func (f *fakeDiscovery) serve(failing []schema.GroupVersion, lists ...*metav1.APIResourceList) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists, f.failing = lists, failing
}

var kustomizations = schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"}

func kustomizationsAt(version string) *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: "kustomize.toolkit.fluxcd.io/" + version, APIResources: []metav1.APIResource{{Name: "kustomizations", Kind: "Kustomization", Namespaced: true}}}
}

var pods = &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true}}}

// kustomization is stored at version; note tells the versions' copies apart.
func kustomization(version, ns, name, note string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kustomize.toolkit.fluxcd.io/" + version, Kind: "Kustomization"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"note": note}},
	}
}

func crd(name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}
}

// newTestCache runs a Cache over fake clients holding objs, with one Set
// over Kustomizations (metadata only).
func newTestCache(t *testing.T, disco *fakeDiscovery, objs ...runtime.Object) (*Cache, *Set) {
	t.Helper()
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	c := NewWithClients(disco, meta, dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), logr.Discard())
	set := c.Follow("test", map[schema.GroupResource]Spec{kustomizations: {Metadata: true}})
	return c, set
}

func start(t *testing.T, c *Cache) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// note reads which version's copy of an object the Set found.
func note(s *Set, ns, name string) string {
	obj, ok := s.Get(kustomizations, ns, name)
	if !ok {
		return ""
	}
	return obj.(*metav1.PartialObjectMetadata).Annotations["note"]
}

func TestSetIsReadyWithoutTheCRDAndStartsWhenItAppears(t *testing.T) {
	disco := &fakeDiscovery{}
	disco.serve(nil, pods)
	c, set := newTestCache(t, disco, kustomization("v1", "apps", "web", "v1"), crd("kustomizations.kustomize.toolkit.fluxcd.io"))
	if err := set.Ready(nil); err == nil {
		t.Fatal("Ready before the first discovery: want an error, got nil")
	}
	start(t, c)
	eventually(t, "ready without the CRD", func() bool { return set.Ready(nil) == nil })
	if _, ok := set.Get(kustomizations, "apps", "web"); ok {
		t.Fatal("Get on a resource that is not served: want not found")
	}

	// The CRD exists but is not served yet, so the Cache asks again soon.
	disco.serve(nil, pods, kustomizationsAt("v1"))
	eventually(t, "the object is found once the CRD is served and the informer synced", func() bool { return note(set, "apps", "web") == "v1" })
	if err := set.Ready(nil); err != nil {
		t.Fatalf("a resource that appeared later must not affect readiness: %v", err)
	}
}

func TestSetServedAtStartGatesReadiness(t *testing.T) {
	disco := &fakeDiscovery{}
	disco.serve(nil, kustomizationsAt("v1"))
	c, set := newTestCache(t, disco, kustomization("v1", "apps", "web", "v1"))
	start(t, c)
	eventually(t, "ready once the informer synced", func() bool { return set.Ready(nil) == nil })
	if set.Watching(kustomizations) != "v1" {
		t.Fatal("a resource served at start must be watched")
	}
	if _, ok := set.Get(kustomizations, "apps", "web"); !ok {
		t.Fatal("ready, but the stored object is not found")
	}
	if _, ok := set.Get(kustomizations, "apps", "other"); ok {
		t.Fatal("an absent object must not be found")
	}
}

// TestSetFollowsTheServedVersion is a Flux upgrade under a running Steward:
// the CRD served v1beta2 at start-up, then v1 as well (preferred), then v1
// only. The informer moves to v1 without a restart, and lookups keep
// answering throughout.
func TestSetFollowsTheServedVersion(t *testing.T) {
	disco := &fakeDiscovery{}
	disco.serve(nil, kustomizationsAt("v1beta2"))
	c, set := newTestCache(t, disco,
		kustomization("v1beta2", "apps", "web", "stored through v1beta2"),
		kustomization("v1", "apps", "web", "stored through v1"))
	start(t, c)
	eventually(t, "ready at v1beta2", func() bool { return set.Ready(nil) == nil })
	if got := note(set, "apps", "web"); got != "stored through v1beta2" {
		t.Fatalf("found %q, want the v1beta2 copy", got)
	}

	disco.serve(nil, kustomizationsAt("v1"), kustomizationsAt("v1beta2"))
	c.trigger() // the CRD's update event
	eventually(t, "the informer moved to the preferred v1", func() bool { return set.Watching(kustomizations) == "v1" })
	if got := note(set, "apps", "web"); got != "stored through v1" {
		t.Fatalf("found %q after the move, want the v1 copy", got)
	}
	if err := set.Ready(nil); err != nil {
		t.Fatalf("moving an informer must not make the Set unready: %v", err)
	}

	disco.serve(nil, kustomizationsAt("v1"))
	c.trigger()
	time.Sleep(3 * debounce)
	if set.Watching(kustomizations) != "v1" || note(set, "apps", "web") != "stored through v1" {
		t.Fatal("dropping a version the informer does not use must change nothing")
	}
}

func TestSetKeepsItsInformersWhenDiscoveryIsPartial(t *testing.T) {
	disco := &fakeDiscovery{}
	disco.serve(nil, kustomizationsAt("v1"))
	c, set := newTestCache(t, disco, kustomization("v1", "apps", "web", "v1"))
	start(t, c)
	eventually(t, "found", func() bool { return note(set, "apps", "web") == "v1" })

	disco.serve([]schema.GroupVersion{{Group: kustomizations.Group, Version: "v1"}}, pods)
	c.trigger()
	eventually(t, "the partial answer is published", func() bool { s := c.Served(); return s != nil && s.Partial })
	if note(set, "apps", "web") != "v1" {
		t.Fatal("a group that failed discovery must not stop its informer")
	}

	disco.serve(nil, pods)
	c.trigger()
	eventually(t, "an unserved resource's informer stops", func() bool { return set.Watching(kustomizations) == "" })
	if _, ok := set.Get(kustomizations, "apps", "web"); ok {
		t.Fatal("a resource no longer served must not be found")
	}
}

func TestServedListsCRDsAndSubscribersHearOfEachDiscovery(t *testing.T) {
	disco := &fakeDiscovery{}
	disco.serve(nil, kustomizationsAt("v1"))
	c, _ := newTestCache(t, disco, crd("kustomizations.kustomize.toolkit.fluxcd.io"))
	notices := c.Subscribe()
	start(t, c)
	select {
	case <-notices:
	case <-time.After(10 * time.Second):
		t.Fatal("no notice after the first discovery")
	}
	s := c.Served()
	if !s.CRDs[kustomizations] || s.Resources[kustomizations] == nil || s.Partial {
		t.Fatalf("Served = %+v, want the Kustomization CRD, served, complete", s)
	}
}

func TestServedKeepsTheCRDsReleaseLabelAndFollowsItsChanges(t *testing.T) {
	disco := &fakeDiscovery{}
	disco.serve(nil, kustomizationsAt("v1"))
	labelled := crd("kustomizations.kustomize.toolkit.fluxcd.io")
	labelled.Labels = map[string]string{AppVersionLabel: "v2.7.0", "app.kubernetes.io/part-of": "flux"}
	c, _ := newTestCache(t, disco, labelled, crd("gitrepositories.source.toolkit.fluxcd.io"))
	start(t, c)
	eventually(t, "the first discovery", func() bool { return c.Served() != nil })
	want := map[schema.GroupResource]string{kustomizations: "v2.7.0"}
	if diff := cmp.Diff(want, c.Served().CRDAppVersions); diff != "" {
		t.Fatalf("CRDAppVersions (-want +got):\n%s", diff)
	}
	// The transform keeps the label and nothing else of the labels.
	kept, err := nameOnly(labelled)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{AppVersionLabel: "v2.7.0"}, kept.(*metav1.PartialObjectMetadata).Labels); diff != "" {
		t.Errorf("labels kept (-want +got):\n%s", diff)
	}

	// An upgrade relabels the CRD: the next answer has the new release.
	labelled.Labels[AppVersionLabel] = "v2.8.0"
	if _, err := c.meta.Resource(crdGVR).(fakeUpdater).UpdateFake(labelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the relabelled CRD is seen", func() bool { return c.Served().CRDAppVersions[kustomizations] == "v2.8.0" })
}

// fakeUpdater is the fake metadata client's update.
type fakeUpdater interface {
	UpdateFake(obj *metav1.PartialObjectMetadata, opts metav1.UpdateOptions, subresources ...string) (*metav1.PartialObjectMetadata, error)
}

func TestResourcesFrom(t *testing.T) {
	groups := []*metav1.APIGroup{{Name: "database.example.org", PreferredVersion: metav1.GroupVersionForDiscovery{Version: "v1beta1"}}}
	lists := []*metav1.APIResourceList{
		{GroupVersion: "database.example.org/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "xpostgresqlinstances", Kind: "XPostgreSQLInstance", Categories: []string{"composite"}},
			{Name: "xpostgresqlinstances/status", Kind: "XPostgreSQLInstance"},
		}},
		{GroupVersion: "database.example.org/v1beta1", APIResources: []metav1.APIResource{
			{Name: "xpostgresqlinstances", Kind: "XPostgreSQLInstance", Categories: []string{"composite"}},
		}},
		{GroupVersion: "not a group version/x/y"},
		nil,
	}
	want := map[schema.GroupResource]*Resource{
		{Group: "database.example.org", Resource: "xpostgresqlinstances"}: {
			GroupResource: schema.GroupResource{Group: "database.example.org", Resource: "xpostgresqlinstances"}, Kind: "XPostgreSQLInstance",
			Versions: []string{"v1beta1", "v1alpha1"}, Categories: []string{"composite"},
		},
	}
	if diff := cmp.Diff(want, resourcesFrom(groups, lists)); diff != "" {
		t.Errorf("resourcesFrom: preferred version first, subresources and bad lists skipped: -want, +got:\n%s", diff)
	}
}

// TestWatchIsSyncedOnceItsHandlerHasSeenTheFirstList: a rule that indexes
// objects from its handler (claimguard) must not be told its cache is
// synced while the handler is still being handed the first list.
func TestWatchIsSyncedOnceItsHandlerHasSeenTheFirstList(t *testing.T) {
	disco := &fakeDiscovery{}
	c, _ := newTestCache(t, disco, kustomization("v1", "apps", "web", "v1"))
	release := make(chan struct{})
	synced := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := c.Watch(ctx, kustomizations.WithVersion("v1"), Spec{
		Metadata: true,
		Handler:  cache.ResourceEventHandlerFuncs{AddFunc: func(any) { <-release }},
		OnSynced: func() { close(synced) },
	})
	eventually(t, "the informer stored the first list", w.informer.HasSynced)
	time.Sleep(3 * debounce)
	if w.HasSynced() {
		t.Fatal("synced while the handler has not been handed the first list")
	}
	select {
	case <-synced:
		t.Fatal("OnSynced called while the handler has not been handed the first list")
	default:
	}
	close(release)
	eventually(t, "synced once the handler has seen the first list", w.HasSynced)
	select {
	case <-synced:
	case <-time.After(10 * time.Second):
		t.Fatal("OnSynced not called")
	}
}

// TestSetListTellsNoneFromNotKnown: an audit must not report "nothing
// found" before the cache knows: List errs until discovery answered,
// lists nothing (without error) for a resource that is not served, and
// every stored object once synced.
func TestSetListTellsNoneFromNotKnown(t *testing.T) {
	disco := &fakeDiscovery{}
	disco.serve(nil, pods)
	c, set := newTestCache(t, disco, kustomization("v1", "apps", "web", "v1"), kustomization("v1", "apps", "api", "v1"), crd("kustomizations.kustomize.toolkit.fluxcd.io"))
	if _, err := set.List(kustomizations); err == nil {
		t.Fatal("List before the first discovery: want an error, got nil")
	}
	start(t, c)
	eventually(t, "discovery answered", func() bool { return set.Ready(nil) == nil })
	if objs, err := set.List(kustomizations); err != nil || len(objs) != 0 {
		t.Fatalf("List of a resource that is not served = %v, %v; want nothing and no error", objs, err)
	}
	disco.serve(nil, pods, kustomizationsAt("v1"))
	eventually(t, "both objects listed once the CRD is served", func() bool {
		objs, err := set.List(kustomizations)
		return err == nil && len(objs) == 2
	})
}
