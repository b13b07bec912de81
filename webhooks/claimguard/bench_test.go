package claimguard

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/rule"
)

// The benchmark cluster: 10k claimed XRs, each composing five MRs (50k
// MRs); one XR in fifty is deleting, with its MRs.
const (
	benchXRs      = 10_000
	benchPerXR    = 5
	deletingEvery = 50
)

var benchKinds = []string{"RDSInstance", "SubnetGroup", "SecurityGroup", "Role", "Grant"}

// benchShape says of which kind each of an XR's benchPerXR MRs is.
type benchShape struct {
	name   string
	kindOf func(k int) int
}

var (
	// oneOfEachKind: each XR composes one MR of each of five kinds.
	oneOfEachKind = benchShape{"OneMRPerKind", func(k int) int { return k }}
	// severalOfOneKind: each XR composes five MRs of one kind (five
	// database Roles, say).
	severalOfOneKind = benchShape{"SeveralMRsOfOneKind", func(int) int { return 0 }}
)

func benchXRName(i int) string { return fmt.Sprintf("db%05d-x7k2p", i) }

// realisticXR is an XR as the API server returns it.
func realisticXR(i int, shape benchShape) *unstructured.Unstructured {
	name := benchXRName(i)
	u := build(name, claimLabels(fmt.Sprintf("team-%03d", i%200), fmt.Sprintf("db%05d", i)), claimRef(fmt.Sprintf("team-%03d", i%200), fmt.Sprintf("db%05d", i)), finalizers(xrFinalizer))
	var refs []map[string]any
	for k := 0; k < benchPerXR; k++ {
		refs = append(refs, map[string]any{"apiVersion": "database.aws.example.org/v1beta1", "kind": benchKinds[shape.kindOf(k)], "name": fmt.Sprintf("%s-%d", name, k)})
	}
	resourceRefs(false, refs...)(u)
	_ = unstructured.SetNestedMap(u.Object, map[string]any{"storageGB": int64(20), "version": "16", "region": "eu-west-1"}, "spec", "parameters")
	_ = unstructured.SetNestedMap(u.Object, map[string]any{"name": "postgres-aws"}, "spec", "compositionRef")
	_ = unstructured.SetNestedField(u.Object, []any{map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2026-01-01T00:00:00Z"}}, "status", "conditions")
	u.SetUID("6c1f0d5e-5b7a-4d0e-9c55-1f4b9c1e2a3b")
	u.SetCreationTimestamp(metav1.NewTime(now.Add(-time.Hour)))
	u.SetGeneration(3)
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "crossplane", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "database.example.org/v1alpha1", FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:resourceRefs":{},"f:claimRef":{},"f:compositionRef":{}}}`)}})
	if i%deletingEvery == 0 {
		deletingSince(3 * time.Minute)(u)
		finalizers(foregroundFinalizer, xrFinalizer)(u)
	}
	return u
}

// realisticMR is the metadata of XR i's k-th MR as the metadata informer
// returns it.
func realisticMR(i, k int) *metav1.PartialObjectMetadata {
	xrName := benchXRName(i)
	tr := true
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("%s-%d", xrName, k), UID: "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", ResourceVersion: "123456", Generation: 2,
		CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
		Labels: map[string]string{labelClaimName: fmt.Sprintf("db%05d", i), labelClaimNamespace: fmt.Sprintf("team-%03d", i%200), labelComposite: xrName,
			"crossplane.io/composition-resource-name": benchKinds[k]},
		Annotations: map[string]string{annotationExtName: fmt.Sprintf("db%05d", i), "crossplane.io/composition-resource-name": benchKinds[k],
			"crossplane.io/external-create-succeeded": "2026-01-01T00:00:00Z"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "database.example.org/v1alpha1", Kind: "XPostgreSQLInstance", Name: xrName, UID: "6c1f0d5e-5b7a-4d0e-9c55-1f4b9c1e2a3b", Controller: &tr, BlockOwnerDeletion: &tr}},
		Finalizers:      []string{mrFinalizer},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "crossplane", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "database.aws.example.org/v1beta1", FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{},"f:annotations":{},"f:ownerReferences":{}},"f:spec":{"f:forProvider":{}}}`)}},
	}}
	if i%deletingEvery == 0 {
		t := metav1.NewTime(now.Add(-3 * time.Minute))
		m.DeletionTimestamp = &t
	}
	return m
}

func benchGK(k int) schema.GroupKind {
	return schema.GroupKind{Group: "database.aws.example.org", Kind: benchKinds[k]}
}

// benchCluster fills the caches through the informers' own transform,
// indexers and event handlers.
func benchCluster(b testing.TB, shape benchShape) *cluster {
	c := newCluster()
	synced := func() bool { return true }
	xrs := &watch{gk: pgXRD.compositeGK(), gvr: pgXRGVR, role: roleComposite, indexer: newObjectStore(),
		owners: c.owners, synced: synced}
	mrs := make([]*watch, len(benchKinds))
	for k := range benchKinds {
		mrs[k] = &watch{gk: benchGK(k), gvr: schema.GroupVersionResource{Group: "database.aws.example.org", Version: "v1beta1", Resource: "x" + fmt.Sprint(k)},
			role: roleManaged, indexer: newObjectStore(), owners: c.owners, synced: synced}
	}
	// The composites' transform, as the discoverer gives it with the
	// benchmark's kinds watched.
	d := &discoverer{}
	watched := map[schema.GroupKind]bool{pgXRD.compositeGK(): true}
	for k := range benchKinds {
		watched[benchGK(k)] = true
	}
	d.watched.Store(&watched)
	for i := 0; i < benchXRs; i++ {
		o, err := d.transform(roleComposite)(realisticXR(i, shape))
		if err != nil {
			b.Fatal(err)
		}
		store(xrs, o.(*object))
		for k := 0; k < benchPerXR; k++ {
			o, err := transform(realisticMR(i, k))
			if err != nil {
				b.Fatal(err)
			}
			store(mrs[shape.kindOf(k)], o.(*object))
		}
	}
	c.s.xrds[pgXRD.compositeGK()], c.s.claims[pgXRD.claimGK()] = pgXRD, pgXRD
	c.s.add(xrs)
	for _, w := range mrs {
		c.s.add(w)
	}
	return c
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runHandler times every call and reports p50 and p99 (wall clock) and the
// CPU time per call (process-wide, GC included) next to ns/op; on a busy
// machine the CPU time is the steadier figure.
func runHandler(b *testing.B, h rule.Rule, rq admission.Request, wantAllowed bool) {
	ctx := context.Background()
	if got := ruletest.Judge(ctx, h, rq); got.Allowed != wantAllowed {
		b.Fatalf("allowed = %v, want %v: %+v", got.Allowed, wantAllowed, got.Result)
	}
	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	rr := new(rule.Request)
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		rr.Reset(rq)
		_ = h.Handle(ctx, rr)
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(durations[len(durations)*99/100].Nanoseconds()), "p99-ns")
}

func BenchmarkClaimguard(b *testing.B) {
	c := benchCluster(b, oneOfEachKind)
	r := c.defaults()
	claim := func(i int) admission.Request {
		return admissiontest.Create(pgClaimGVR, "PostgreSQLInstance", req(fmt.Sprintf("db%05d", i), inNamespace(fmt.Sprintf("team-%03d", i%200)),
			func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedMap(u.Object, map[string]any{"storageGB": int64(20)}, "spec", "parameters")
			})).Build()
	}
	mrCreate := func(i int) admission.Request {
		return admissiontest.Create(rdsGVR, "RDSInstance", realisticMR(i, 0)).Build()
	}
	mrCreate0 := mrCreate(deletingEvery*3 + 1)
	mrCreate0.Kind.Kind = benchKinds[0]
	mrDenied := admissiontest.Create(rdsGVR, "RDSInstance", func() *metav1.PartialObjectMetadata {
		m := realisticMR(deletingEvery*3, 0)
		m.Name, m.DeletionTimestamp = "db-new-0", nil
		return m
	}()).Build()
	cases := []struct {
		name    string
		h       rule.Rule
		req     admission.Request
		allowed bool
	}{
		{"AllowAllBaseline", ruletest.AllowAll{}, claim(1), true},
		{"ClaimCreateAllowed", r, claim(deletingEvery*3 + 1), true},
		{"ClaimCreateDenied", r, claim(deletingEvery * 3), false},
		{"CompositeCreateAllowed", r, admissiontest.Create(pgXRGVR, "XPostgreSQLInstance", realisticXR(deletingEvery*3+1, oneOfEachKind).Object).Build(), true},
		{"ManagedCreateAllowed", r, mrCreate0, true},
		{"ManagedCreateDenied", r, mrDenied, false},
		{"CompositeDeleteForegroundWarning", r, admissiontest.Delete(pgXRGVR, "XPostgreSQLInstance", realisticXR(deletingEvery*3+1, oneOfEachKind).Object).
			Options(metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}).Build(), true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) { runHandler(b, tc.h, tc.req, tc.allowed) })
	}
}

// BenchmarkClaimguardCacheBytes measures the heap the caches hold per
// cached object (10k XRs, 50k MRs, indexes included), reported as
// bytes/object, for both shapes of composition: one MR of each of five
// kinds per XR, and five MRs of one kind per XR. One iteration fills the
// caches; run it with the default -benchtime (or -benchtime=1x).
func BenchmarkClaimguardCacheBytes(b *testing.B) {
	for _, shape := range []benchShape{oneOfEachKind, severalOfOneKind} {
		b.Run(shape.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				kept := ruletest.HeapKept(func() any { return benchCluster(b, shape) })
				b.ReportMetric(float64(kept)/float64(benchXRs*(1+benchPerXR)), "bytes/object")
				b.ReportMetric(float64(kept)/(1<<20), "MiB")
			}
		})
	}
}

// BenchmarkClaimguardAudit is one audit pass over the benchmark cluster
// (10k XRs, 50k MRs, one XR in fifty deleting in Foreground for an hour):
// its time and what it allocates, all of it garbage once the pass ends.
func BenchmarkClaimguardAudit(b *testing.B) {
	c := benchCluster(b, oneOfEachKind)
	r := c.rule(warnAfter(time.Minute))
	r.now = func() time.Time { return now.Add(time.Hour) }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, err := r.Audit(context.Background(), nil)
		if err != nil || len(got) == 0 {
			b.Fatalf("Audit(...) = %d findings, %v", len(got), err)
		}
	}
}
