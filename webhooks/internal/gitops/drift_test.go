package gitops

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/object"
)

// applied is when the tests' agent last applied their objects.
var applied = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

// fieldsEntry is one managedFields entry as the API server records it,
// owning the fields at paths; a zero time is none.
func fieldsEntry(manager, subresource string, at time.Time, paths ...[]string) metav1.ManagedFieldsEntry {
	tree := map[string]any{}
	for _, p := range paths {
		node := tree
		for _, k := range p {
			next, ok := node[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				node[k] = next
			}
			node = next
		}
	}
	raw, err := json.Marshal(tree)
	if err != nil {
		panic(err)
	}
	e := metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1",
		Subresource: subresource, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(raw))}
	if !at.IsZero() {
		t := metav1.NewTime(at)
		e.Time = &t
	}
	return e
}

var (
	imagePath    = []string{"f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"web"}`, "f:image"}
	replicasPath = []string{"f:spec", "f:replicas"}
)

func TestDriftOf(t *testing.T) {
	later := applied.Add(time.Hour)
	agent := []string{"kustomize-controller"}
	apply := fieldsEntry("kustomize-controller", "", applied, imagePath, replicasPath)
	cases := map[string]struct {
		reason  string
		entries []metav1.ManagedFieldsEntry
		agent   []string
		skip    []object.Pointer
		want    Drift
		drifted bool
	}{
		"AnEditAfterTheAgentIsDrift": {
			reason:  "kubectl edit of the image after the agent applied the object is drift, by its manager and field.",
			entries: []metav1.ManagedFieldsEntry{apply, fieldsEntry("kubectl-edit", "", later, imagePath)},
			agent:   agent,
			want:    Drift{Managers: []string{"kubectl-edit"}, At: metav1.NewTime(later), Fields: []string{"/spec/template/spec/containers/[name=web]/image"}},
			drifted: true,
		},
		"AnEditBeforeTheAgentsLastWriteIsNoDrift": {
			reason:  "The agent applied over the edit since.",
			entries: []metav1.ManagedFieldsEntry{fieldsEntry("kubectl-edit", "", applied.Add(-time.Hour), imagePath), apply},
			agent:   agent,
		},
		"EveryAgentManagerCounts": {
			reason: "Argo CD writes as argocd-controller (apply) and argocd-application-controller (create, replace): " +
				"the later of the two is the agent's last write, and neither is drift.",
			entries: []metav1.ManagedFieldsEntry{
				fieldsEntry("argocd-application-controller", "", applied, imagePath),
				fieldsEntry("kubectl-edit", "", applied.Add(time.Minute), imagePath),
				fieldsEntry("argocd-controller", "", applied.Add(2*time.Minute), replicasPath),
			},
			agent: []string{"argocd-controller", "argocd-application-controller"},
		},
		"KubernetesAndServerManagedFieldsAreNoDrift": {
			reason: "Kubernetes' controllers, status and bookkeeping are how the cluster works.",
			entries: []metav1.ManagedFieldsEntry{apply,
				fieldsEntry("kube-controller-manager", "", later, []string{"f:metadata", "f:annotations", "f:deployment.kubernetes.io/revision"}),
				fieldsEntry("some-operator", "status", later, []string{"f:status", "f:conditions"}),
				fieldsEntry("kubectl-client-side-apply", "", later, []string{"f:metadata", "f:annotations", "f:kubectl.kubernetes.io/last-applied-configuration"}),
			},
			agent: agent,
		},
		"SkippedFieldsAreNoDrift": {
			reason:  "A scale of a Deployment whose replicas are ignored is no drift.",
			entries: []metav1.ManagedFieldsEntry{apply, fieldsEntry("kubectl", "scale", later, replicasPath)},
			agent:   agent,
			skip:    MustPointers("/spec/replicas"),
		},
		"SkippedFieldsLeaveTheOthers": {
			reason:  "Skipping /spec/replicas leaves the image changed with it.",
			entries: []metav1.ManagedFieldsEntry{apply, fieldsEntry("kubectl-edit", "", later, imagePath, replicasPath)},
			agent:   agent,
			skip:    MustPointers("/spec/replicas"),
			want:    Drift{Managers: []string{"kubectl-edit"}, At: metav1.NewTime(later), Fields: []string{"/spec/template/spec/containers/[name=web]/image"}},
			drifted: true,
		},
		"ManyFieldsAreBounded": {
			reason: "Ten fields are listed eight at a time with the count of the rest.",
			entries: func() []metav1.ManagedFieldsEntry {
				var paths [][]string
				for _, c := range "abcdefghij" {
					paths = append(paths, []string{"f:data", "f:" + string(c)})
				}
				return []metav1.ManagedFieldsEntry{apply, fieldsEntry("kubectl-edit", "", later, paths...)}
			}(),
			agent:   agent,
			want:    Drift{Managers: []string{"kubectl-edit"}, At: metav1.NewTime(later), Fields: []string{"/data/a", "/data/b", "/data/c", "/data/d", "/data/e", "/data/f", "/data/g", "/data/h"}, Unlisted: 2},
			drifted: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, drifted := DriftOf(tc.entries, tc.agent, tc.skip)
			if drifted != tc.drifted {
				t.Fatalf("%s\nDriftOf(...) drifted = %v, want %v (%+v)", tc.reason, drifted, tc.drifted, got)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDriftOf(...) (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestFieldToken(t *testing.T) {
	for in, want := range map[string]string{
		"f:image":          "image",
		"i:3":              "3",
		`k:{"name":"web"}`: "[name=web]",
		`k:{"protocol":"TCP","containerPort":80}`: "[containerPort=80,protocol=TCP]",
		`v:"finalizer.example.org"`:               `["finalizer.example.org"]`,
		`k:not json`:                              "[not json]",
		".":                                       ".",
	} {
		if got := fieldToken(in); got != want {
			t.Errorf("fieldToken(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzDriftOf feeds arbitrary fieldsV1 documents and managers through
// DriftOf: never a panic, always within bounds, and every field a pointer
// the ignored fields can match.
func FuzzDriftOf(f *testing.F) {
	f.Add(`{"f:spec":{"f:replicas":{}}}`, "kubectl", int64(3600))
	f.Add(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{}}}}}}}`, "kubectl-edit", int64(1))
	f.Add(`{"f:status":{"f:replicas":{}}}`, "x", int64(5))
	f.Add(`{"k:{\"a\":[1,{\"b\":null}]}":{"v:[1]":{}}}`, strings.Repeat("m", 200), int64(-5))
	f.Add(`not json`, "", int64(0))
	agent := fieldsEntry("kustomize-controller", "", applied, replicasPath)
	f.Fuzz(func(t *testing.T, fieldsV1, manager string, offset int64) {
		e := fieldsEntry(manager, "", applied.Add(time.Duration(offset)*time.Second))
		e.FieldsV1 = metav1.NewFieldsV1(fieldsV1)
		d, ok := DriftOf([]metav1.ManagedFieldsEntry{agent, e}, []string{"kustomize-controller"}, MustPointers("/spec/replicas"))
		if !ok {
			return
		}
		if len(d.Fields) > MaxDriftFields || len(d.Managers) > MaxDriftManagers || d.Unlisted < 0 || len(d.Fields)+d.Unlisted == 0 {
			t.Fatalf("drift out of bounds: %+v", d)
		}
		for _, m := range d.Managers {
			if len(m) > MaxManagerName {
				t.Fatalf("manager name not cut: %q", m)
			}
		}
		for _, p := range d.Fields {
			ptr, err := object.ParsePointer(p)
			if err != nil {
				t.Fatalf("field %q is not a pointer the audit can match: %v", p, err)
			}
			if Skipped(ptr, MustPointers("/spec/replicas")) {
				t.Fatalf("skipped field %q reported", p)
			}
		}
	})
}
