package gitops

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/webhooks/object"
)

// mergeObject is a Deployment kustomize-controller applied with ssa:
// Merge: its apply entry owns the replicas and the web container's image;
// an autoscaler and a person set the rest.
func mergeObject(edit func(map[string]any)) *object.View {
	o := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{
			"name": "web", "namespace": "apps",
			"annotations": map[string]any{"kustomize.toolkit.fluxcd.io/ssa": "Merge"},
			"managedFields": []any{
				map[string]any{"manager": "kustomize-controller", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
					"fieldsV1": map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}, "f:template": map[string]any{"f:spec": map[string]any{
						"f:containers": map[string]any{`k:{"name":"web"}`: map[string]any{".": map[string]any{}, "f:image": map[string]any{}, "f:name": map[string]any{}}}}}}}},
				map[string]any{"manager": "kubectl-edit", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
					"fieldsV1": map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:spec": map[string]any{
						"f:containers": map[string]any{`k:{"name":"sidecar"}`: map[string]any{".": map[string]any{}, "f:image": map[string]any{}}}}}}}},
			},
		},
		"spec": map[string]any{
			"replicas": 2,
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "sidecar", "image": "proxy:1"},
				map[string]any{"name": "web", "image": "web:1"},
			}}},
		},
	}
	if edit != nil {
		edit(o)
	}
	b, _ := json.Marshal(o)
	return object.New(b)
}

func containers(o map[string]any) []any {
	return o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
}

func TestAppliedFieldsFollowListItemsByTheirKeys(t *testing.T) {
	got, ok := AppliedFields(mergeObject(nil), "kustomize-controller")
	if !ok {
		t.Fatal("no apply entry found")
	}
	var paths []string
	for _, p := range got {
		paths = append(paths, p.String())
	}
	want := map[string]bool{"/spec/replicas": true, "/spec/template/spec/containers/1": true, "/spec/template/spec/containers/1/image": true, "/spec/template/spec/containers/1/name": true}
	if len(paths) != len(want) {
		t.Fatalf("AppliedFields = %v, want %v", paths, want)
	}
	for _, p := range paths {
		if !want[p] {
			t.Errorf("AppliedFields has %s, which the entry does not own (want %v)", p, want)
		}
	}
	if _, ok := AppliedFields(mergeObject(nil), "helm-controller"); ok {
		t.Error("AppliedFields found an entry for a manager that has none")
	}
}

func TestChangesOfAnAppliedObject(t *testing.T) {
	owners := []Owner{{Applies: "kustomize-controller"}}
	cases := map[string]struct {
		reason  string
		edit    func(map[string]any)
		want    object.Changes
		refused bool
	}{
		"AFieldOthersSet": {
			reason: "The sidecar's image is a person's: the apply entry does not own it.",
			edit:   func(o map[string]any) { containers(o)[0].(map[string]any)["image"] = "proxy:2" },
			want:   object.Changes{},
		},
		"AFieldTheEntryOwns": {
			reason: "The web container's image is in Git.",
			edit:   func(o map[string]any) { containers(o)[1].(map[string]any)["image"] = "web:2" },
			want:   object.Changes{First: []string{"/spec/template/spec/containers/1/image"}, Total: 1},
		},
		"RemovingAnOwnedItem": {
			reason: "Dropping the web container removes owned fields.",
			edit: func(o map[string]any) {
				spec := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
				spec["containers"] = containers(o)[:1]
			},
			want: object.Changes{First: []string{"/spec/template/spec/containers/1/image", "/spec/template/spec/containers/1/name"}, Total: 2},
		},
		"RewritingTheApplyEntry": {
			reason:  "Rewriting managedFields so the entry owns nothing would make every field editable.",
			edit:    func(o map[string]any) { o["metadata"].(map[string]any)["managedFields"] = []any{} },
			refused: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, refused := changes(mergeObject(nil), mergeObject(tc.edit), ServerManaged, owners)
			if (refused != "") != tc.refused {
				t.Fatalf("%s\nrefused = %q, want refused %v", tc.reason, refused, tc.refused)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nchanges (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
