package gitops

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// oneOwner is a resolver that claims every object for one Kustomization.
type oneOwner struct{ owner Owner }

func (oneOwner) Claim(Ref, *object.View) Claim { return Claim{Claims: true} }
func (r oneOwner) Owners(context.Context, Ref, *object.View) ([]Owner, error) {
	return []Owner{r.owner}, nil
}

var appsOwner = Owner{
	Name: "Flux Kustomization flux-system/apps", Manages: true, Revert: "it is reverted at the next reconcile",
	FieldManagers: []string{"kustomize-controller"}, Undeclared: "kustomize-controller keeps fields others set",
	Strips: []string{"kubectl", "before-first-apply"},
}

// appliedDeployment is a Deployment kustomize-controller applied from Git
// without replicas: its entry owns the labels, the selector and the web
// container's image, keyed by name as server-side apply keys containers;
// the sidecar was added by an operator. managers are entries the update
// wrote, as the API server records them before admission.
func appliedDeployment(edit func(map[string]any), managers ...string) map[string]any {
	entries := []any{
		map[string]any{"manager": "kustomize-controller", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-11-27T09:41:05Z", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{
				"f:metadata": map[string]any{"f:labels": map[string]any{"f:app": map[string]any{}}},
				"f:spec": map[string]any{"f:selector": map[string]any{}, "f:template": map[string]any{"f:spec": map[string]any{
					"f:containers": map[string]any{`k:{"name":"web"}`: map[string]any{".": map[string]any{}, "f:image": map[string]any{}, "f:name": map[string]any{}}}}}}}},
		map[string]any{"manager": "sidecar-injector", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-11-27T09:42:00Z", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:spec": map[string]any{
				"f:containers": map[string]any{`k:{"name":"proxy"}`: map[string]any{".": map[string]any{}, "f:image": map[string]any{}, "f:name": map[string]any{}}}}}}}},
	}
	for _, m := range managers {
		entries = append(entries, map[string]any{"manager": m, "operation": "Update", "apiVersion": "apps/v1", "time": "2026-11-27T10:00:00Z", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:metadata": map[string]any{"f:annotations": map[string]any{}}}})
	}
	o := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "apps", "labels": map[string]any{"app": "web"}, "managedFields": entries},
		"spec": map[string]any{
			"replicas": 3,
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "proxy", "image": "proxy:1"},
				map[string]any{"name": "web", "image": "web:1"},
			}}},
		},
	}
	if edit != nil {
		edit(o)
	}
	return o
}

func podSpec(o map[string]any) map[string]any {
	return admissiontest.At(o, "spec", "template", "spec")
}

// decisionCase is one write the decision table answers: allowed or not,
// with what the answer must say and never say.
type decisionCase struct {
	name, reason string
	old, cur     map[string]any
	user         string
	undeclared   Undeclared
	allowed      bool
	says, never  []string
}

// TestTheDecisionTable holds every guard to one table: Git's fields are
// the tool's own record's, the cluster's machinery keeps its fields, and a
// person's change of a field Git does not declare is refused saying so,
// or answered as the tool would.
func TestTheDecisionTable(t *testing.T) {
	const person, operator = "jane@example.com", "system:serviceaccount:ops:reloader"
	annotate := func(o map[string]any) { admissiontest.Set("1", "metadata", "annotations", "example.com/reloaded")(o) }
	cases := []decisionCase{{
		name: "APersonsEditOfGitsField", reason: "The image is Git's: kustomize-controller forces it back.",
		old: appliedDeployment(nil), cur: appliedDeployment(func(o map[string]any) {
			podSpec(o)["containers"].([]any)[1].(map[string]any)["image"] = "web:2"
		}),
		user: person, says: []string{"it is reverted at the next reconcile", "Changed: /spec/template/spec/containers/1/image."},
	}, {
		name: "AnOperatorsEditOfGitsField", reason: "Machinery gets no pass for Git's fields either.",
		old: appliedDeployment(nil), cur: appliedDeployment(func(o map[string]any) {
			podSpec(o)["containers"].([]any)[1].(map[string]any)["image"] = "web:2"
		}),
		user: operator, says: []string{"reverted", "/spec/template/spec/containers/1/image"},
	}, {
		name: "AnOperatorsOwnField", reason: "The sidecar is not in Git: the tool keeps it, so its operator may change it.",
		old: appliedDeployment(nil), cur: appliedDeployment(func(o map[string]any) {
			podSpec(o)["containers"].([]any)[0].(map[string]any)["image"] = "proxy:2"
		}),
		user: "system:serviceaccount:istio-system:istiod", allowed: true, says: []string{"changed only fields Git does not declare", "keeps"},
	}, {
		name: "TheAutoscalersReplicas", reason: "Git does not declare replicas: an HPA's value is kept by every tool.",
		old: appliedDeployment(nil), cur: appliedDeployment(admissiontest.Set(7, "spec", "replicas")),
		user: "system:serviceaccount:kube-system:horizontal-pod-autoscaler", allowed: true,
	}, {
		name: "AnOperatorsAnnotation", reason: "A reloader stamps an annotation under its own manager.",
		old: appliedDeployment(nil), cur: appliedDeployment(annotate, "reloader"),
		user: operator, allowed: true,
	}, {
		name: "APersonsAnnotationIsRefusedHonestly", reason: "By default a person's change outside Git is refused, and the denial says the field is not in Git and claims no revert.",
		old: appliedDeployment(nil), cur: appliedDeployment(annotate, "k9s"),
		user: person, says: []string{"which Git does not declare", "kustomize-controller keeps fields others set", "declare it in the Git repository"},
		never: []string{"reverted"},
	}, {
		name: "MirrorKeepsWhatTheToolKeeps", reason: "With mirror, a person's change the tool keeps passes.",
		old: appliedDeployment(nil), cur: appliedDeployment(annotate, "k9s"),
		user: person, undeclared: UndeclaredMirror, allowed: true, says: []string{"as k9s"},
	}, {
		name: "MirrorRefusesWhatTheToolStrips", reason: "kustomize-controller strips what a kubectl manager wrote, even outside Git.",
		old: appliedDeployment(nil), cur: appliedDeployment(annotate, "kubectl-annotate"),
		user: person, undeclared: UndeclaredMirror, says: []string{"written by the field manager kubectl-annotate", "removes what that manager writes at its next reconcile"},
		never: []string{"reverted"},
	}, {
		name: "AServiceAccountUsingKubectlIsStrippedToo", reason: "The manager decides what kustomize-controller strips, not the identity.",
		old: appliedDeployment(nil), cur: appliedDeployment(annotate, "kubectl-edit"),
		user: "system:serviceaccount:ci:deployer", says: []string{"kubectl-edit"},
	}, {
		name: "RewritingTheToolsEntry", reason: "Dropping the image from kustomize-controller's entry would make it look like someone else's field.",
		old: appliedDeployment(nil), cur: appliedDeployment(func(o map[string]any) {
			e := admissiontest.At(o, "metadata")["managedFields"].([]any)[0].(map[string]any)
			e["fieldsV1"] = map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{"f:app": map[string]any{}}}}
		}),
		user: operator, says: []string{"/metadata/managedFields (the kustomize-controller entry"},
	}, {
		name: "AMarkerIsGitsWhoeverWrites", reason: "The markers decide who manages the object: an operator may not add an opt-out.",
		old: appliedDeployment(nil), cur: appliedDeployment(admissiontest.Set("disabled", "metadata", "annotations", "example.com/opt-out")),
		user: operator, says: []string{"Adding an opt-out"},
	}, {
		name: "NoRecordMeansEveryFieldIsGits", reason: "An object written before the tool used server-side apply has no entry: every field counts, and the denial says why.",
		old:  appliedDeployment(admissiontest.Del("metadata", "managedFields")),
		cur:  appliedDeployment(func(o map[string]any) { delete(o["metadata"].(map[string]any), "managedFields"); annotate(o) }),
		user: operator, says: []string{"have no entry of kustomize-controller", "Every field counts as Git's"},
	}}
	// The API server takes a field out of the tool's entry when someone
	// else changes it: an ignored one may change, and its entry with it.
	withReplicas := func(edit func(map[string]any)) map[string]any {
		return appliedDeployment(func(o map[string]any) {
			e := admissiontest.At(o, "metadata")["managedFields"].([]any)[0].(map[string]any)
			admissiontest.At(e, "fieldsV1", "f:spec")["f:replicas"] = map[string]any{}
			if edit != nil {
				edit(o)
			}
		})
	}
	cases = append(cases, decisionCase{
		name: "AnIgnoredFieldLeavesTheToolsEntry", reason: "kubectl scale of an ignored replicas moves it out of kustomize-controller's entry: no rewrite.",
		old: withReplicas(nil), cur: appliedDeployment(admissiontest.Set(9, "spec", "replicas")),
		user: person, allowed: true,
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := New(Options{Rule: "fluxguard", Tool: "Flux", AgentName: "a Flux controller", Settings: Settings{UndeclaredFields: tc.undeclared, IgnoredFields: []IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas"}}}},
				OptOut: OptOut{Paths: []object.Pointer{{"metadata", "annotations", "example.com/opt-out"}}},
			}, oneOwner{appsOwner})
			req := admissiontest.Update(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment", tc.old, tc.cur).User(tc.user).Build()
			got := g.Handle(context.Background(), rule.NewRequest(req))
			msg := got.Result.Message
			if got.Allowed != tc.allowed {
				t.Fatalf("%s\nallowed = %v, want %v: %s", tc.reason, got.Allowed, tc.allowed, msg)
			}
			for _, s := range tc.says {
				if !strings.Contains(msg, s) {
					t.Errorf("%s\nthe answer does not say %q: %s", tc.reason, s, msg)
				}
			}
			for _, s := range tc.never {
				if strings.Contains(msg, s) {
					t.Errorf("%s\nthe answer says %q, which is not true here: %s", tc.reason, s, msg)
				}
			}
		})
	}
}

// TestDeclaredFieldsFollowKeyedListItems reads ownership through list
// items known by their keys, whatever their index.
func TestDeclaredFieldsFollowKeyedListItems(t *testing.T) {
	raw, _ := json.Marshal(appliedDeployment(nil))
	v := object.New(raw)
	d, ok := declaredBy(fieldEntries(v, nil), []string{"kustomize-controller"})
	if !ok {
		t.Fatal("kustomize-controller's entry was not found")
	}
	for path, want := range map[string]bool{
		"/spec/template/spec/containers/1/image": true,  // web, by its key
		"/spec/template/spec/containers/1":       true,  // the item itself
		"/spec/template/spec/containers/0/image": false, // proxy, the operator's
		"/spec/template/spec/containers/2/image": false, // no such item
		"/spec/replicas":                         false, // not in Git
		"/spec/selector/matchLabels/app":         true,  // under an atomic field
		"/spec":                                  true,  // above owned fields
		"/metadata/labels/app":                   true,
		"/metadata/labels/team":                  false,
	} {
		p, err := object.ParsePointer(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.owns(v, p); got != want {
			t.Errorf("owns(%s) = %v, want %v", path, got, want)
		}
	}
	if _, ok := declaredBy(fieldEntries(v, nil), []string{"helm-controller"}); ok {
		t.Error("an entry was found for a manager that has none")
	}
}

// scaledOwner is oneOwner on the scale path, reading the workload's
// managedFields from entries.
type scaledOwner struct {
	oneOwner
	entries []metav1.ManagedFieldsEntry
	read    bool
}

func (r scaledOwner) OwnersOf(context.Context, Ref) ([]Owner, error) {
	return []Owner{r.owner}, nil
}

func (r scaledOwner) ReplicasDeclared(_ context.Context, _ Ref, owners []Owner) (bool, string, error) {
	if !r.read {
		return true, "", nil
	}
	declared, unrecorded := ReplicasInGit(&metav1.ObjectMeta{ManagedFields: r.entries}, owners)
	return declared, unrecorded, nil
}

// TestScaleFollowsWhetherGitDeclaresReplicas judges a scale request, whose
// Scale carries no managedFields, by the workload's own.
func TestScaleFollowsWhetherGitDeclaresReplicas(t *testing.T) {
	entry := func(fields string) []metav1.ManagedFieldsEntry {
		return []metav1.ManagedFieldsEntry{{Manager: "kustomize-controller", Operation: metav1.ManagedFieldsOperationApply,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}}
	}
	inGit := entry(`{"f:spec":{"f:replicas":{},"f:template":{}}}`)
	notInGit := entry(`{"f:spec":{"f:template":{}}}`)
	cases := []struct {
		name, reason, user string
		entries            []metav1.ManagedFieldsEntry
		read               bool
		undeclared         Undeclared
		allowed            bool
		says               string
	}{
		{"GitDeclaresReplicas", "kustomize-controller forces them back.", "jane", inGit, true, "", false, "it is reverted at the next reconcile"},
		{"AnOperatorWhereGitDoesNot", "The tool keeps them.", "system:serviceaccount:ops:scaler", notInGit, true, "", true, "whose replicas Git does not declare"},
		{"APersonWhereGitDoesNot", "Refused by default, saying they are not in Git.", "jane", notInGit, true, "", false, "which Git does not declare"},
		{"APersonWithMirror", "No tool strips what /scale wrote.", "jane", notInGit, true, UndeclaredMirror, true, "whose replicas Git does not declare"},
		{"NoRecordOfTheTool", "Every field is Git's, and the denial says why.", "system:serviceaccount:ops:scaler", nil, true, "", false, "have no entry of kustomize-controller"},
		{"NothingToReadFrom", "Without a reader the replicas count as Git's.", "system:serviceaccount:ops:scaler", nil, false, "", false, "reverted"},
		{"TheAutoscaler", "The HPA's scale is its job.", "system:serviceaccount:kube-system:horizontal-pod-autoscaler", inGit, true, "", true, "autoscaler"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := New(Options{Rule: "fluxguard", Tool: "Flux", Settings: Settings{UndeclaredFields: tc.undeclared}}, scaledOwner{oneOwner: oneOwner{appsOwner}, entries: tc.entries, read: tc.read})
			scale := func(n int) map[string]any {
				return map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": map[string]any{"name": "web", "namespace": "apps"}, "spec": map[string]any{"replicas": n}}
			}
			req := admissiontest.Update(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Scale", scale(2), scale(5)).SubResource("scale").User(tc.user).Build()
			got := g.Handle(context.Background(), rule.NewRequest(req))
			if got.Allowed != tc.allowed || !strings.Contains(got.Result.Message, tc.says) {
				t.Errorf("%s\nallowed = %v (want %v), message %q (want it to say %q)", tc.reason, got.Allowed, tc.allowed, got.Result.Message, tc.says)
			}
		})
	}
}
