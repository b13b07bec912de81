package suspendnotice

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/rule"
)

// fakeSuspended is a suspension cache holding objs, or failing with err.
type fakeSuspended struct {
	objs []suspendedObject
	err  error
}

func (f fakeSuspended) Suspended(schema.GroupResource, string, string) bool { return false }
func (f fakeSuspended) suspendedObjects() ([]suspendedObject, error)        { return f.objs, f.err }

func TestAuditReportsEachSuspendedObject(t *testing.T) {
	kustomization := byGroupKind[schema.GroupKind{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization"}]
	r := New(Config{})
	r.suspensions = fakeSuspended{objs: []suspendedObject{{
		kind:       kustomization,
		apiVersion: "kustomize.toolkit.fluxcd.io/v1",
		meta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "u1", Annotations: map[string]string{
			AnnotationSuspendedBy: "alice", AnnotationSuspendedAt: "2026-01-01T00:00:00Z",
		}},
	}}}
	got, err := r.Audit(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []rule.Finding{{
		Check:   "suspended",
		Result:  rule.AuditWarn,
		Object:  corev1.ObjectReference{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: "apps", Name: "web", UID: "u1"},
		Message: "Kustomization apps/web is suspended and will not reconcile until resumed: flux resume kustomization web -n apps",
		Properties: map[string]string{
			"suspendedBy": "alice",
			"suspendedAt": "2026-01-01T00:00:00Z",
		},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a suspended object is a warning naming who suspended it, when, and how to resume it (-want +got):\n%s", diff)
	}
}

func TestAuditErrsUntilTheCacheCanAnswer(t *testing.T) {
	r := New(Config{})
	if _, err := r.Audit(context.Background(), nil); err == nil {
		t.Error("a rule never set up must not report that nothing is suspended")
	}
	r.suspensions = fakeSuspended{err: errors.New("informer has not synced")}
	if _, err := r.Audit(context.Background(), nil); err == nil {
		t.Error("a cache that has not synced must not report that nothing is suspended")
	}
}
