package gitops

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/webhooks/object"
)

// syncedClientSide is a Deployment as Argo CD's client-side apply created
// it from a manifest without replicas: its Update entry (or, with op
// "Apply", a server-side apply's entry) owns the defaults the API server
// filled in, replicas and strategy among them; the last-applied
// annotation holds the manifest, unless lastApplied is empty.
func syncedClientSide(op, lastApplied string) *object.View {
	annotations := map[string]any{}
	if lastApplied != "" {
		annotations[LastAppliedAnnotation] = lastApplied
	}
	o := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "apps", "annotations": annotations, "managedFields": []any{
			map[string]any{"manager": "argocd-controller", "operation": op, "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{
				"f:metadata": map[string]any{"f:annotations": map[string]any{"f:" + LastAppliedAnnotation: map[string]any{}}},
				"f:spec": map[string]any{"f:replicas": map[string]any{}, "f:strategy": map[string]any{}, "f:template": map[string]any{"f:spec": map[string]any{
					"f:containers": map[string]any{`k:{"name":"web"}`: map[string]any{"f:image": map[string]any{}, "f:name": map[string]any{}}}}}},
			}},
		}},
		"spec": map[string]any{"replicas": 1, "strategy": map[string]any{"type": "RollingUpdate"}, "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": "web:1", "ports": []any{map[string]any{"containerPort": 80}}}}}}},
	}
	raw, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return object.New(raw)
}

const webManifest = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"apps"},` +
	`"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:1","ports":[{"containerPort":80}]}]}}}}`

func TestGitsFieldsOfAClientSideApplyAreTheLastApplied(t *testing.T) {
	argo := Owner{Name: "Argo CD Application argocd/web", Manages: true, FieldManagers: []string{"argocd-controller"}, LastApplied: true}
	cases := map[string]struct {
		reason      string
		op, applied string
		owner       Owner
		path        string
		git         bool
	}{
		"ADefaultTheEntryOwnsIsNotGits": {
			reason: "Argo CD's Update entry owns replicas, which the API server defaulted; the manifest it applied has none, and Argo CD keeps a scale.",
			op:     "Update", applied: webManifest, owner: argo, path: "/spec/replicas",
		},
		"AFieldTheManifestSetsIsGits": {
			reason: "The container's image is in the manifest Argo CD applied.",
			op:     "Update", applied: webManifest, owner: argo, path: "/spec/template/spec/containers/0/image", git: true,
		},
		"AnItemKnownByItsIndexIsGits": {
			reason: "A port has no name: the manifest's first port is the object's first.",
			op:     "Update", applied: webManifest, owner: argo, path: "/spec/template/spec/containers/0/ports/0/containerPort", git: true,
		},
		"TheAnnotationItselfIsGits": {
			reason: "The annotation is Argo CD's record of Git: rewriting it would make Git's fields look like someone else's.",
			op:     "Update", applied: webManifest, owner: argo, path: "/metadata/annotations/" + object.EscapeToken(LastAppliedAnnotation), git: true,
		},
		"AServerSideApplyEntryIsReadAsItIs": {
			reason: "With ServerSideApply=true Argo CD's Apply entry records exactly what Git declares.",
			op:     "Apply", applied: webManifest, owner: argo, path: "/spec/replicas", git: true,
		},
		"WithoutTheAnnotationTheEntryCounts": {
			reason: "An object Argo CD applied without the annotation is judged by its entry.",
			op:     "Update", owner: argo, path: "/spec/replicas", git: true,
		},
		"AToolThatKeepsNoAnnotationReadsItsEntry": {
			reason: "The annotation counts only for a tool whose apply keeps it: another tool's Update entry is read as it is.",
			op:     "Update", applied: webManifest, owner: Owner{Name: "Fleet", Manages: true, FieldManagers: []string{"argocd-controller"}}, path: "/spec/replicas", git: true,
		},
		"AManifestThatIsNotJSONLeavesTheEntry": {
			reason: "A broken annotation is no record: the entry counts.",
			op:     "Update", applied: "{not json", owner: argo, path: "/spec/replicas", git: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := syncedClientSide(tc.op, tc.applied)
			s := splitFields(v, v, object.Changes{First: []string{tc.path}, Total: 1}, []Owner{tc.owner}, nil, nil)
			if got := s.git.Total > 0; got != tc.git {
				t.Errorf("%s\n%s counted as Git's: %v, want %v (git %v, other %v)", tc.reason, tc.path, got, tc.git, s.git, s.other)
			}
		})
	}
}

func TestLastAppliedTree(t *testing.T) {
	tree, ok := lastAppliedTree([]byte(`{"data":{"color":"blue"},"spec":{"args":["--a","--b"],"ports":[{"containerPort":80}],"containers":[{"name":"web"}]}}`))
	if !ok {
		t.Fatal("lastAppliedTree refused a manifest")
	}
	var got any
	if err := json.Unmarshal(tree, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"f:data": map[string]any{"f:color": map[string]any{}},
		"f:spec": map[string]any{
			"f:args":       map[string]any{`v:"--a"`: map[string]any{}, `v:"--b"`: map[string]any{}},
			"f:ports":      map[string]any{"i:0": map[string]any{"f:containerPort": map[string]any{}}},
			"f:containers": map[string]any{`k:{"name":"web"}`: map[string]any{"f:name": map[string]any{}}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the tree of a manifest: scalars' lists by value, named items by name, others by index (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "[]", `"x"`, "{"} {
		if _, ok := lastAppliedTree([]byte(bad)); ok {
			t.Errorf("lastAppliedTree(%q) succeeded", bad)
		}
	}
}
