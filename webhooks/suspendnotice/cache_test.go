package suspendnotice

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	want := &metav1.PartialObjectMetadata{
		TypeMeta: full.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "apps", UID: "u1", ResourceVersion: "7",
			Annotations: map[string]string{AnnotationSuspendedAt: "2026-01-01T00:00:00Z", AnnotationSuspendedBy: "alice"},
		},
	}
	got, err := keepSuspension(full)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keepSuspension keeps identity and the suspension record only: -want +got:\n%s", diff)
	}
	again, _ := keepSuspension(got)
	if diff := cmp.Diff(want, again); diff != "" {
		t.Errorf("keepSuspension must be idempotent: -want +got:\n%s", diff)
	}
	notSuspended := full.DeepCopy()
	notSuspended.Annotations = map[string]string{"team": "web", AnnotationSuspendedBy: "alice"}
	slim, _ := keepSuspension(notSuspended)
	if a := slim.(*metav1.PartialObjectMetadata).Annotations; a != nil {
		t.Errorf("an object that is not suspended (no suspended-at) keeps no annotations, not even a stray suspended-by; got %v", a)
	}
}
