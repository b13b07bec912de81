package fleetguard

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/stewardhq/steward/webhooks/internal/ruletest"
)

// fleetWorkload is a Fleet-managed Deployment's metadata as the API server
// sends it to a metadata informer: Fleet's and Helm's keys, wrangler's
// applied annotation (a gzipped, base64 copy of the object: incompressible
// bytes), the deployment controller's revision, and managedFields of the
// agent, the controller and kubectl.
func fleetWorkload(tb testing.TB, i int) *metav1.PartialObjectMetadata {
	tb.Helper()
	return fleetWorkloadEditedAt(tb, i, "")
}

// fleetWorkloadEditedAt is fleetWorkload whose kubectl entry was written
// at the given time ("" for none), and the agent's at 2026-11-01T10:00:00Z:
// a later edit is drift, whose summary the cache keeps.
func fleetWorkloadEditedAt(tb testing.TB, i int, edited string) *metav1.PartialObjectMetadata {
	tb.Helper()
	kubectlTime := ""
	if edited != "" {
		kubectlTime = `"time":"` + edited + `",`
	}
	applied := make([]byte, 3000)
	if _, err := rand.Read(applied); err != nil {
		tb.Fatal(err)
	}
	fields := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"f:spec":{`)
		for j := 0; j < n; j++ {
			fmt.Fprintf(&b, `"f:field%d":{},`, j)
		}
		b.WriteString(`"f:replicas":{}}}`)
		return b.String()
	}
	doc := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{
		"name":"web-%[1]d","namespace":"apps","uid":"0b6f1e9c-%08[1]d","resourceVersion":"%[1]d","generation":3,
		"creationTimestamp":"2026-11-01T10:00:00Z",
		"labels":{"objectset.rio.cattle.io/hash":"3e4c9a2f6b0d8e1a7c5b9d3f2e6a8c0b4d7f1e9a","app.kubernetes.io/managed-by":"Helm","app":"web-%[1]d"},
		"annotations":{"objectset.rio.cattle.io/id":"default-web-app","meta.helm.sh/release-name":"web-app","meta.helm.sh/release-namespace":"apps",
			"deployment.kubernetes.io/revision":"3","objectset.rio.cattle.io/applied":%[2]q},
		"managedFields":[
			{"manager":"fleetagent","operation":"Apply","apiVersion":"apps/v1","time":"2026-11-01T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":%[3]s},
			{"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","subresource":"status","time":"2026-11-01T10:00:05Z","fieldsType":"FieldsV1","fieldsV1":%[4]s},
			{"manager":"kubectl","operation":"Update","apiVersion":"apps/v1",%[6]s"fieldsType":"FieldsV1","fieldsV1":%[5]s}]}}`,
		i, "H4sI"+base64.StdEncoding.EncodeToString(applied), fields(60), fields(20), fields(5), kubectlTime)
	var o metav1.PartialObjectMetadata
	if err := json.Unmarshal([]byte(doc), &o); err != nil {
		tb.Fatal(err)
	}
	return &o
}

func TestTrimWorkloadKeepsWhatScaleDecisionsRead(t *testing.T) {
	in := fleetWorkload(t, 1)
	got, err := trimWorkload(in)
	if err != nil {
		t.Fatal(err)
	}
	out := got.(*metav1.PartialObjectMetadata)
	// What is kept is packed into the generateName: the hash, the id, no
	// owner kind, the release, the replicas marker (the agent's entry
	// owns the replicas: Git declares them), no drift.
	want := &metav1.PartialObjectMetadata{TypeMeta: in.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: "web-1", Namespace: "apps", ResourceVersion: "1",
		GenerateName: packCached(map[string]string{cachedHashAnnotation: in.Labels[LabelHash], AnnotationID: "default-web-app", AnnotationReleaseName: "web-app", AnnotationReleaseNamespace: "apps", cachedReplicasAnnotation: ""}),
	}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("trimmed workload (-want +got):\n%s", diff)
	}
	if len(out.Finalizers) != 0 {
		t.Errorf("the trimmed workload keeps finalizers %q, want none", out.Finalizers)
	}
	wantRead := map[string]string{cachedHashAnnotation: in.Labels[LabelHash], AnnotationID: "default-web-app", AnnotationReleaseName: "web-app", AnnotationReleaseNamespace: "apps",
		cachedReplicasAnnotation: ""}
	if diff := cmp.Diff(wantRead, cachedMeta(out).Annotations); diff != "" {
		t.Errorf("the trimmed workload's kept values read back as annotations (-want +got):\n%s", diff)
	}
	// A workload of the API server whose generateName looks packed is read
	// as it is: only the cache's own output carries no labels.
	forged := in.DeepCopy()
	forged.GenerateName = out.GenerateName
	if got := cachedMeta(forged).Annotations; got[cachedReplicasAnnotation] != "" || got[AnnotationID] != "default-web-app" || len(got) != len(in.Annotations) {
		t.Errorf("a labelled object's generateName is read as kept values: %v", got)
	}
	if parent := cachedMeta(out); !parent.managed() || parent.owner() != (objectMeta{Labels: in.Labels, Annotations: in.Annotations}).owner() {
		t.Errorf("the trimmed workload no longer reads as the same Fleet-managed object: owner %q", parent.owner())
	}
	if parent := cachedMeta(out); parent.Labels[LabelHash] != in.Labels[LabelHash] {
		t.Errorf("the cached workload reads with labels %v, want the hash label %q", parent.Labels, in.Labels[LabelHash])
	}
	// An object the cache never trimmed reads as it is.
	if m := cachedMeta(in); m.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("an untrimmed object's labels are not read as they are: %v", m.Labels)
	}
	// An annotation of the hash on an object of the API server is not
	// kept: only the hash label is.
	spoofed := in.DeepCopy()
	delete(spoofed.Labels, LabelHash)
	spoofed.Annotations[cachedHashAnnotation] = "spoofed"
	if got, _ := trimWorkload(spoofed); cachedMeta(got.(*metav1.PartialObjectMetadata)).managed() {
		t.Errorf("an object without the hash label is kept as Fleet-managed through an annotation %s", cachedHashAnnotation)
	}
	again, _ := trimWorkload(out)
	if diff := cmp.Diff(out, again); diff != "" {
		t.Errorf("trimming is not idempotent (-once +twice):\n%s", diff)
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "apps/web-1", Obj: in}
	if passed, _ := trimWorkload(tombstone); passed != tombstone {
		t.Errorf("a value that is no object's metadata is passed through, got %T", passed)
	}
}

// TestPackedValuesReadBackWhateverTheyHold: an annotation's value may
// hold any byte, NULs and the bytes of a length among them; no value
// shifts another's slot, and a packing cut short reads as nothing kept.
func TestPackedValuesReadBackWhateverTheyHold(t *testing.T) {
	long := strings.Repeat("x", 300) // a length of two varint bytes
	for name, kept := range map[string]map[string]string{
		"NULs and length bytes": {AnnotationID: "a\x00b", AnnotationOwnerGVK: "\x00", AnnotationReleaseName: "\x01\x02\x80", cachedReplicasAnnotation: ""},
		"a long value":          {AnnotationID: long, driftAnnotation: long + "!"},
		"nothing":               {},
	} {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{GenerateName: packCached(kept)}}
		if diff := cmp.Diff(kept, unpackCached(o)); diff != "" {
			t.Errorf("%s: read back (-packed +read):\n%s", name, diff)
		}
		whole := o.GenerateName
		for cut := len(packedMark); cut < len(whole); cut++ {
			o.GenerateName = whole[:cut]
			if got := unpackCached(o); got != nil {
				t.Errorf("%s: a packing cut at %d of %d reads back as %v, want nothing", name, cut, len(whole), got)
			}
		}
	}
	if got := unpackCached(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{GenerateName: packedMark + "\x05ab"}}); got != nil {
		t.Errorf("a length past the end reads as %v, want nothing", got)
	}
}

func TestWorkloadCachesAreTrimmed(t *testing.T) {
	for obj, by := range New(Config{}, "").CacheByObject() {
		if by.Transform == nil {
			t.Errorf("the %s metadata cache keeps whole objects", obj.GetObjectKind().GroupVersionKind().Kind)
		}
	}
}

// BenchmarkFleetWorkloadCacheBytes measures the heap a cached Fleet-managed
// workload holds in the metadata cache, as the API server sends it and as
// trimWorkload keeps it (bytes/object; run with -benchtime=1x).
func BenchmarkFleetWorkloadCacheBytes(b *testing.B) {
	const n = 2000
	for _, tc := range []struct {
		name      string
		transform cache.TransformFunc
		// edited is when kubectl last wrote: after the agent, every
		// object has drifted (the worst case), before it none has.
		edited string
	}{{"Untrimmed", nil, ""}, {"Trimmed", trimWorkload, "2026-11-01T09:00:00Z"}, {"TrimmedAllDrifted", trimWorkload, "2026-11-02T10:00:00Z"}} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				kept := ruletest.HeapKept(func() any {
					store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
					for j := 0; j < n; j++ {
						// Decoded here, as the informer decodes each
						// object; what the store does not keep is garbage
						// by the end.
						var o any = fleetWorkloadEditedAt(b, j, tc.edited)
						if tc.transform != nil {
							o, _ = tc.transform(o)
						}
						if err := store.Add(o); err != nil {
							b.Fatal(err)
						}
					}
					return store
				})
				b.ReportMetric(float64(kept)/n, "bytes/object")
			}
		})
	}
}
