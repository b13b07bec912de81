package gitops

import (
	"encoding/json"
	"testing"

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

func TestOwnsInManifest(t *testing.T) {
	manifest := []byte(`{"spec":{"args":["--a","--b"],"ports":[{"containerPort":80}],"containers":[{"name":"web","image":"web:1"}],"empty":{}}}`)
	live := object.New([]byte(`{"spec":{"args":["--b","--c"],"ports":[{"containerPort":80},{"containerPort":81}],` +
		`"containers":[{"name":"proxy","image":"p:1"},{"name":"web","image":"web:2"}],"empty":{"x":1}}}`))
	cases := map[string]bool{
		"/spec/args/0":                       true,  // --b, which the manifest lists
		"/spec/args/1":                       false, // --c, which it does not
		"/spec/ports/0/containerPort":        true,  // unnamed: by index
		"/spec/ports/1/containerPort":        false, // beyond the manifest's list
		"/spec/containers/1/image":           true,  // web, by its name, at another index
		"/spec/containers/0/image":           false, // proxy, which Git does not declare
		"/spec/containers/1/imagePullPolicy": false,
		"/spec/empty/x":                      false, // an empty object declares none of its members
		"/spec":                              true,
		"/status":                            false,
	}
	for path, want := range cases {
		p, err := object.ParsePointer(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := ownsInManifest(manifest, live, p); got != want {
			t.Errorf("ownsInManifest(%s) = %v, want %v", path, got, want)
		}
	}
	for _, bad := range []string{"", "[]", `"x"`, "{", `{"a":`} {
		if _, ok := lastAppliedDeclared(nil, map[string]string{LastAppliedAnnotation: bad}); ok {
			t.Errorf("lastAppliedDeclared(%q) read a manifest", bad)
		}
	}
}
