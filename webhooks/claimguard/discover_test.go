package claimguard

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
)

// fakeDiscovery serves a list of resources that a test may change.
type fakeDiscovery struct {
	mu    sync.Mutex
	lists []*metav1.APIResourceList
}

func (f *fakeDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var groups []*metav1.APIGroup
	for _, l := range f.lists {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		groups = append(groups, &metav1.APIGroup{Name: gv.Group, PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: l.GroupVersion, Version: gv.Version}})
	}
	return groups, append([]*metav1.APIResourceList(nil), f.lists...), nil
}

func (f *fakeDiscovery) set(lists ...*metav1.APIResourceList) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = lists
}

func resourceList(gv string, resources ...metav1.APIResource) *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: resources}
}

func crdMeta(name string) runtime.Object {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}
}

func withTypeMeta(u *unstructured.Unstructured, apiVersion, kind string) *unstructured.Unstructured {
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDiscovererFollowsTheCluster drives the cluster cache and the
// planning loop against fake clients: it finds the XRD's kinds and the managed kinds, becomes ready
// once they synced (or cannot be listed), answers from its caches, and
// stops watching a kind that is no longer served.
func TestDiscovererFollowsTheCluster(t *testing.T) {
	xrdRes := metav1.APIResource{Name: "compositeresourcedefinitions", Kind: "CompositeResourceDefinition"}
	pgRes := metav1.APIResource{Name: "xpostgresqlinstances", Kind: "XPostgreSQLInstance", Categories: []string{"composite"}}
	claimRes := metav1.APIResource{Name: "postgresqlinstances", Kind: "PostgreSQLInstance", Namespaced: true, Categories: []string{"claim"}}
	rdsRes := metav1.APIResource{Name: "rdsinstances", Kind: "RDSInstance", Categories: []string{"crossplane", "managed"}}
	bucketRes := metav1.APIResource{Name: "buckets", Kind: "Bucket", Categories: []string{"managed"}}
	disco := &fakeDiscovery{}
	disco.set(
		resourceList("apiextensions.crossplane.io/v1", xrdRes),
		resourceList("database.example.org/v1alpha1", pgRes, claimRes),
		resourceList("database.aws.example.org/v1beta1", rdsRes),
		resourceList("s3.aws.example.org/v1beta1", bucketRes),
	)

	xrd := withTypeMeta(&unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "xpostgresqlinstances.database.example.org"},
		"spec": map[string]any{"group": "database.example.org", "names": map[string]any{"kind": "XPostgreSQLInstance", "plural": "xpostgresqlinstances"},
			"claimNames": map[string]any{"kind": "PostgreSQLInstance", "plural": "postgresqlinstances"},
			"versions":   []any{map[string]any{"name": "v1alpha1", "served": true, "referenceable": true}}},
	}}, "apiextensions.crossplane.io/v1", "CompositeResourceDefinition")
	deleting := withTypeMeta(build("db-x7k2p", claimLabels("default", "db"), deletingSince(time.Minute), finalizers(foregroundFinalizer)), "database.example.org/v1alpha1", "XPostgreSQLInstance")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		xrdGroupResource.WithVersion("v1"): "CompositeResourceDefinitionList",
		pgXRGVR:                            "XPostgreSQLInstanceList",
	}, xrd, deleting)

	mrMeta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "database.aws.example.org/v1beta1", Kind: "RDSInstance"},
		ObjectMeta: metav1.ObjectMeta{Name: "db-x7k2p-abcde", Annotations: map[string]string{annotationExtName: "db"}, DeletionTimestamp: &metav1.Time{Time: now}}}
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme,
		crdMeta("compositeresourcedefinitions.apiextensions.crossplane.io"), crdMeta("xpostgresqlinstances.database.example.org"),
		crdMeta("postgresqlinstances.database.example.org"), crdMeta("rdsinstances.database.aws.example.org"), crdMeta("buckets.s3.aws.example.org"), mrMeta)
	// Steward may not list buckets: RBAC was not extended for that provider.
	meta.PrependReactor("list", "buckets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "s3.aws.example.org", Resource: "buckets"}, "", nil)
	})

	r := New(Config{})
	r.now = func() time.Time { return now }
	cluster := clustercache.NewWithClients(disco, meta, dyn, logr.Discard())
	d := newDiscoverer(r, cluster)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- cluster.Start(ctx) }()
	go func() { done <- d.Start(ctx) }()
	defer func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}()

	waitFor(t, "claimguard is ready", r.found.ready.Load)
	if err := r.readyCheck(nil); err != nil {
		t.Fatalf("readyCheck after sync: %v", err)
	}
	s := r.found.snap.Load()
	if s.composites[pgXRD.compositeGK()] == nil || s.managed[rdsGK] == nil || s.claims[pgXRD.claimGK()] == nil {
		t.Fatalf("snapshot misses kinds: composites %v managed %v claims %v", s.composites, s.managed, s.claims)
	}
	if st := s.managed[schema.GroupKind{Group: "s3.aws.example.org", Kind: "Bucket"}].state(); st != stateForbidden {
		t.Errorf("buckets state = %v, want forbidden", st)
	}

	claim := admissiontest.Create(pgClaimGVR, "PostgreSQLInstance", req("db", inNamespace("default"))).Build()
	if got := ruletest.Judge(ctx, r, claim); got.Allowed || !strings.Contains(got.Result.Message, "XPostgreSQLInstance db-x7k2p, the composite resource of the previous claim default/db") {
		t.Errorf("claim create answered from the caches: %+v", got.Result)
	}
	mr := admissiontest.Create(rdsGVR, "RDSInstance", req("db-n3w11-xyz", externalName("db"))).Build()
	if got := ruletest.Judge(ctx, r, mr); got.Allowed {
		t.Errorf("MR create with the external name of a deleting MR was allowed")
	}
	bucket := admissiontest.Create(schema.GroupVersionResource{Group: "s3.aws.example.org", Version: "v1beta1", Resource: "buckets"}, "Bucket", req("logs", externalName("logs"))).Build()
	if got := ruletest.Judge(ctx, r, bucket); !got.Allowed || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "Steward may not list buckets.s3.aws.example.org") {
		t.Errorf("a kind Steward may not list must be allowed with a warning, got allowed=%v warnings=%v", got.Allowed, got.Warnings)
	}
	if rules := webhookRules(s, "CREATE"); len(rules) != 1 || strings.Join(rules[0].Resources, ",") != "postgresqlinstances,xpostgresqlinstances" {
		t.Errorf("webhook rules = %+v", rules)
	}

	// The provider of RDSInstances is uninstalled: its kind is no longer
	// served, and the deleted CRD makes the cluster cache ask again. The S3
	// provider is upgraded meanwhile: buckets are served at v1 only.
	disco.set(
		resourceList("apiextensions.crossplane.io/v1", xrdRes),
		resourceList("database.example.org/v1alpha1", pgRes, claimRes),
		resourceList("s3.aws.example.org/v1", bucketRes),
	)
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if err := meta.Resource(crds).Delete(ctx, "rdsinstances.database.aws.example.org", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the RDSInstance watch stops", func() bool { return r.found.snap.Load().managed[rdsGK] == nil })
	if got := ruletest.Judge(ctx, r, mr); !got.Allowed {
		t.Errorf("a kind no longer served is not a managed kind: %+v", got.Result)
	}
	bucketGK := schema.GroupKind{Group: "s3.aws.example.org", Kind: "Bucket"}
	if w := r.found.snap.Load().managed[bucketGK]; w == nil || w.gvr.Version != "v1" {
		t.Errorf("the Bucket watch must move to the version now served, got %+v", w)
	}
}
