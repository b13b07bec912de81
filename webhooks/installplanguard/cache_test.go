package installplanguard

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestKeepPhase(t *testing.T) {
	full := &unstructured.Unstructured{Object: plan(planOpts{phase: "Installing", approved: true, csvs: []any{"etcd.v1"}, owners: ownedBy("etcd")})}
	full.SetUID("u1")
	full.SetResourceVersion("42")
	full.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	full.SetLabels(map[string]string{"a": "b"})
	want := map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1",
		"kind":       "InstallPlan",
		"metadata":   map[string]any{"name": "install-abcde", "namespace": "operators", "uid": "u1", "resourceVersion": "42", "creationTimestamp": "2026-01-01T00:00:00Z"},
		"status":     map[string]any{"phase": "Installing"},
	}

	got, err := keepPhase(full)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.(*unstructured.Unstructured).Object); diff != "" {
		t.Errorf("keepPhase keeps only identity, creation time and phase: -want +got:\n%s", diff)
	}
	again, _ := keepPhase(got)
	if diff := cmp.Diff(want, again.(*unstructured.Unstructured).Object); diff != "" {
		t.Errorf("keepPhase must be idempotent: -want +got:\n%s", diff)
	}
	if other, _ := keepPhase("tombstone"); other != "tombstone" {
		t.Errorf("keepPhase must pass through what is not an object, got %v", other)
	}
}
