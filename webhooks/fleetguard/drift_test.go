package fleetguard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// agentApplied is when the Fleet agent last applied the tests' workloads.
var agentApplied = gitopstest.Applied

// entry is one managedFields entry as the API server records it; a zero
// time is none.
func entry(manager, operation, subresource string, at time.Time, paths ...[]string) metav1.ManagedFieldsEntry {
	raw, err := json.Marshal(fields(paths...))
	if err != nil {
		panic(err)
	}
	e := metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationType(operation), APIVersion: "apps/v1",
		Subresource: subresource, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(raw))}
	if !at.IsZero() {
		t := metav1.NewTime(at)
		e.Time = &t
	}
	return e
}

var (
	imageField    = []string{"f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"web"}`, "f:image"}
	replicasField = []string{"f:spec", "f:replicas"}
	// agentEntry is the agent's server-side apply of the whole manifest.
	agentEntry = entry(AgentFieldManager, "Apply", "", agentApplied, imageField, replicasField,
		[]string{"f:metadata", "f:labels", "f:objectset.rio.cattle.io/hash"})
	// controllerEntries are the deployment controller's writes after the
	// agent's: its revision annotation and the status.
	controllerEntries = []metav1.ManagedFieldsEntry{
		entry("kube-controller-manager", "Update", "", agentApplied.Add(time.Minute), []string{"f:metadata", "f:annotations", "f:deployment.kubernetes.io/revision"}),
		entry("kube-controller-manager", "Update", "status", agentApplied.Add(time.Minute), []string{"f:status", "f:replicas"}),
	}
)

// workload is a Fleet-managed Deployment's metadata as the API server
// sends it to the metadata informer, with the given managedFields.
func workload(name string, entries ...metav1.ManagedFieldsEntry) *metav1.PartialObjectMetadata {
	m := fleetMeta(name)
	m.ResourceVersion = "7"
	m.ManagedFields = entries
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: m}
}

// cached is the workload as the cache keeps it: through trimWorkload.
func cached(t testing.TB, in *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	t.Helper()
	out, err := trimWorkload(in)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*metav1.PartialObjectMetadata)
}

// workloadCache is a client.Reader listing cached workloads, as the
// manager's cache lists its informers' stores.
type workloadCache struct {
	items map[string][]metav1.PartialObjectMetadata // by kind
	err   error
}

func (c workloadCache) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return fmt.Errorf("the audit lists the cache")
}

func (c workloadCache) List(_ context.Context, l client.ObjectList, _ ...client.ListOption) error {
	if c.err != nil {
		return c.err
	}
	list, ok := l.(*metav1.PartialObjectMetadataList)
	if !ok {
		return fmt.Errorf("the workload cache holds metadata only, not %T", l)
	}
	list.Items = c.items[strings.TrimSuffix(list.GroupVersionKind().Kind, "List")]
	return nil
}

func cacheOf(t testing.TB, objs ...*metav1.PartialObjectMetadata) workloadCache {
	c := workloadCache{items: map[string][]metav1.PartialObjectMetadata{}}
	for _, o := range objs {
		c.items[o.Kind] = append(c.items[o.Kind], *cached(t, o))
	}
	return c
}

func TestAuditDrift(t *testing.T) {
	later := agentApplied.Add(time.Hour)
	ref := func(name string) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: name}
	}
	drift := func(name, managers, fields string, changes int) rule.Finding {
		return rule.Finding{Check: CheckDrift, Result: rule.AuditFail, Object: ref(name), Properties: map[string]string{
			"managers": managers, "fields": fields, "changedAt": "2026-11-20T11:00:00Z", "changes": fmt.Sprint(changes)}}
	}
	var many [][]string
	for i := range 12 {
		many = append(many, []string{"f:spec", "f:template", "f:metadata", "f:annotations", fmt.Sprintf("f:example.org/note-%02d", i)})
	}
	owned := workload("rancher", agentEntry, entry("kubectl-edit", "Update", "", later, imageField))
	owned.Annotations[AnnotationOwnerGVK] = "management.cattle.io/v3, Kind=Cluster"
	cases := map[string]struct {
		reason string
		rule   *Rule
		cache  workloadCache
		want   []rule.Finding
	}{
		"AnEditAfterTheAgentsLastWriteIsDrift": {
			reason: "kubectl edit of the image after the agent applied the bundle is reported, with the manager and the field.",
			rule:   defaultRule(),
			cache:  cacheOf(t, workload("web", append([]metav1.ManagedFieldsEntry{agentEntry, entry("kubectl-edit", "Update", "", later, imageField)}, controllerEntries...)...)),
			want:   []rule.Finding{drift("web", "kubectl-edit", "/spec/template/spec/containers/[name=web]/image", 1)},
		},
		"AnEditTheAgentHasAppliedOverSinceIsNoDrift": {
			reason: "An older edit whose manager still owns a field is not drift: the agent wrote after it.",
			rule:   defaultRule(),
			cache:  cacheOf(t, workload("web", entry("kubectl-edit", "Update", "", agentApplied.Add(-time.Hour), imageField), agentEntry)),
		},
		"KubernetesControllersAreNoDrift": {
			reason: "The deployment controller's revision annotation and status after the agent's write are how the cluster works.",
			rule:   defaultRule(),
			cache:  cacheOf(t, workload("web", append([]metav1.ManagedFieldsEntry{agentEntry}, controllerEntries...)...)),
		},
		"StatusAndBookkeepingAreNoDrift": {
			reason: "Another manager writing only status or server-managed metadata changed nothing Fleet deploys.",
			rule:   defaultRule(),
			cache: cacheOf(t, workload("web", agentEntry,
				entry("some-operator", "Update", "status", later, []string{"f:status", "f:conditions"}),
				entry("kubectl-client-side-apply", "Update", "", later, []string{"f:metadata", "f:annotations", "f:kubectl.kubernetes.io/last-applied-configuration"}))),
		},
		"AScaleIsDriftUnlessReplicasAreIgnored": {
			reason: "kubectl scale writes /spec/replicas through the scale subresource.",
			rule:   defaultRule(),
			cache:  cacheOf(t, workload("web", agentEntry, entry("kubectl", "Update", "scale", later, replicasField))),
			want:   []rule.Finding{drift("web", "kubectl", "/spec/replicas", 1)},
		},
		"IgnoredFieldsAreNoDrift": {
			reason: "With /spec/replicas ignored for Deployments (as for an autoscaler), a scale is no drift.",
			rule:   ignoringReplicas(),
			cache:  cacheOf(t, workload("web", agentEntry, entry("kubectl", "Update", "scale", later, replicasField))),
		},
		"IgnoredFieldsLeaveTheOthers": {
			reason: "Ignoring /spec/replicas removes it from the fields, not the image change next to it.",
			rule:   ignoringReplicas(),
			cache:  cacheOf(t, workload("web", agentEntry, entry("kubectl-edit", "Update", "", later, imageField, replicasField))),
			want:   []rule.Finding{drift("web", "kubectl-edit", "/spec/template/spec/containers/[name=web]/image", 1)},
		},
		"ManyFieldsAndManagersAreBounded": {
			reason: "Twelve changed fields are listed five at a time with the count; managers are listed by name.",
			rule:   defaultRule(),
			cache:  cacheOf(t, workload("web", agentEntry, entry("reloader", "Update", "", later, many[:6]...), entry("kubectl-annotate", "Update", "", later.Add(-time.Minute), many[6:]...))),
			want: []rule.Finding{drift("web", "kubectl-annotate, reloader",
				"/spec/template/metadata/annotations/example.org~1note-00, /spec/template/metadata/annotations/example.org~1note-01, /spec/template/metadata/annotations/example.org~1note-02, "+
					"/spec/template/metadata/annotations/example.org~1note-03, /spec/template/metadata/annotations/example.org~1note-04 and 7 more", 12)},
		},
		"ObjectSetsWithAnOwnerAreNotFleetBundles": {
			reason: "Objects applied with an owner (Rancher's, Fleet controller's) are not guarded at admission, nor audited.",
			rule:   defaultRule(),
			cache:  cacheOf(t, owned),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.rule.WithParents(tc.cache).Audit(context.Background(), nil)
			if err != nil {
				t.Fatalf("%s\nAudit(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(rule.Finding{}, "Message")); diff != "" {
				t.Errorf("%s\nAudit(...) (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAuditDriftMessage(t *testing.T) {
	c := cacheOf(t, workload("web", agentEntry, entry("kubectl-edit", "Update", "", agentApplied.Add(time.Hour), imageField)))
	got, err := defaultRule().WithParents(c).Audit(context.Background(), nil)
	want := "fleetguard: Deployment default/web is managed by Fleet (bundle deployment web-app, Helm release default/web-app); manual changes diverge from Git and Fleet reverts them. " +
		"Changed since the Fleet agent last applied it, by kubectl-edit: /spec/template/spec/containers/[name=web]/image. Change it in the Git repository instead; " +
		"if the change is meant to stay, ignore the field in fleet.yaml (diff.comparePatches) and in fleetguard's ignoredFields."
	gitopstest.CheckMessages(t, got, err, want)
}

func TestAuditDriftNeedsTheCache(t *testing.T) {
	if _, err := New(Config{}, "").Audit(context.Background(), nil); err == nil {
		t.Error("Audit without the workload cache succeeded")
	}
	if _, err := defaultRule().WithParents(workloadCache{err: fmt.Errorf("cache not synced")}).Audit(context.Background(), nil); err == nil {
		t.Error("Audit over a cache that cannot list succeeded; it must fail so the previous findings stand")
	}
}

func TestTrimWorkloadKeepsADriftSummaryOnlyForDrift(t *testing.T) {
	clean := cached(t, workload("web", append([]metav1.ManagedFieldsEntry{agentEntry,
		entry("some-operator", "Update", "status", agentApplied.Add(time.Hour), []string{"f:status", "f:conditions"})}, controllerEntries...)...))
	kept := cachedMeta(clean).Annotations
	delete(kept, cachedReplicasAnnotation) // the agent's entry owns the replicas
	if _, ok := kept[driftAnnotation]; ok || len(kept) != 4 {
		t.Errorf("a workload without drift (its later writers wrote only status) is cached with annotations %v, want only the three ownership annotations, the hash and the replicas marker", kept)
	}
	spoofed := workload("web", agentEntry)
	spoofed.Annotations[driftAnnotation] = `{"m":["x"],"f":["/spec"]}`
	if got := cachedMeta(cached(t, spoofed)).Annotations[driftAnnotation]; got != "" {
		t.Errorf("an annotation %s on the object itself is kept: %q", driftAnnotation, got)
	}
	drifted := cached(t, workload("web", agentEntry, entry("kubectl-edit", "Update", "", agentApplied.Add(time.Hour), imageField)))
	want := `{"m":["kubectl-edit"],"t":"2026-11-20T11:00:00Z","f":["/spec/template/spec/containers/[name=web]/image"]}`
	if got := cachedMeta(drifted).Annotations[driftAnnotation]; got != want {
		t.Errorf("drift summary = %s, want %s", got, want)
	}
	if drifted.ManagedFields != nil {
		t.Error("managedFields are kept")
	}
	if again := cached(t, drifted); !cmp.Equal(drifted, again) {
		t.Errorf("trimming a drifted workload is not idempotent:\n%s", cmp.Diff(drifted, again))
	}
}

// FuzzDriftOf feeds arbitrary fieldsV1 documents and managers through
// the transform's summary and back: never a panic, always within bounds,
// and what the cache keeps reads back as written.
func FuzzDriftOf(f *testing.F) {
	f.Add(`{"f:spec":{"f:replicas":{}}}`, "kubectl", int64(3600))
	f.Add(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{}}}}}}}`, "kubectl-edit", int64(1))
	f.Add(`{"f:status":{"f:replicas":{}}}`, "x", int64(5))
	f.Add(`{"k:{\"a\":[1,{\"b\":null}]}":{"v:[1]":{}}}`, strings.Repeat("m", 200), int64(-5))
	f.Add(`not json`, "", int64(0))
	f.Fuzz(func(t *testing.T, fieldsV1, manager string, offset int64) {
		e := entry(manager, "Update", "", agentApplied.Add(time.Duration(offset)*time.Second))
		e.FieldsV1 = metav1.NewFieldsV1(fieldsV1)
		s, ok := driftOf([]metav1.ManagedFieldsEntry{agentEntry, e})
		if !ok {
			return
		}
		if len(s.Fields) > gitops.MaxDriftFields || len(s.Managers) > gitops.MaxDriftManagers || s.Unlisted < 0 {
			t.Fatalf("summary out of bounds: %+v", s)
		}
		for _, m := range s.Managers {
			if len(m) > gitops.MaxManagerName {
				t.Fatalf("manager name not cut: %q", m)
			}
		}
		back, ok := decodeDrift(s.encode())
		if !ok || !cmp.Equal(s, back) {
			t.Fatalf("summary does not read back: %+v, got %+v (%v)", s, back, ok)
		}
		for _, p := range s.Fields {
			if _, err := object.ParsePointer(p); err != nil {
				t.Fatalf("field %q is not a pointer the audit can match: %v", p, err)
			}
		}
	})
}

// FuzzDecodeDrift reads arbitrary annotation values: never a panic, and
// nothing negative or empty passes for drift.
func FuzzDecodeDrift(f *testing.F) {
	f.Add(`{"m":["kubectl"],"t":"2026-11-20T11:00:00Z","f":["/spec/replicas"]}`)
	f.Add(`{"n":-3}`)
	f.Add(`{"f":[]}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, v string) {
		s, ok := decodeDrift(v)
		if ok && (s.Unlisted < 0 || len(s.Fields)+s.Unlisted == 0) {
			t.Fatalf("decodeDrift(%q) = %+v, reads as drift", v, s)
		}
		o := workload("web")
		o.Annotations[driftAnnotation] = v
		o.ManagedFields = nil
		_, _ = defaultRule().driftFinding(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, cached(t, o))
	})
}

func TestAuditReportsAFightWithAnAutoscaler(t *testing.T) {
	api := gitopstest.NewReader()
	api.Replicas = map[string]int64{"default/web": 3}
	minReplicas := int32(2)
	api.Autoscalers = []autoscalingv2.HorizontalPodAutoscaler{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    &minReplicas, MaxReplicas: 8,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{DesiredReplicas: 5, LastScaleTime: &metav1.Time{Time: agentApplied}},
	}}
	// The agent's entry owns the replicas of web; the HPA holds those of
	// held (its scale took them from the agent): nothing tells Git's.
	held := workload("held", entry("fleetagent", "Update", "", agentApplied, imageField), entry("kube-controller-manager", "Update", "scale", agentApplied, []string{"f:spec", "f:replicas"}))
	c := cacheOf(t, workload("web", agentEntry), held)
	got, err := defaultRule().WithParents(c).Audit(context.Background(), api)
	if err != nil || len(got) != 1 {
		t.Fatalf("Audit(...) = %v, %v; want one finding, the fight over web's replicas", got, err)
	}
	want := "fleetguard: Deployment default/web is managed by Fleet (bundle deployment web-app, Helm release default/web-app). " +
		"Git declares spec.replicas (3) and HorizontalPodAutoscaler default/web scales it (from 2 to 8, wants 5): the Fleet agent puts Git's value back " +
		"at each reconcile and the autoscaler scales it again. Remove spec.replicas from the workload's manifest in the Git repository and leave them to the autoscaler."
	if got[0].Check != gitops.CheckAutoscalerFight || got[0].Result != rule.AuditWarn || got[0].Message != want {
		t.Errorf("finding %s/%s:\n got %s\nwant %s", got[0].Check, got[0].Result, got[0].Message, want)
	}
}
