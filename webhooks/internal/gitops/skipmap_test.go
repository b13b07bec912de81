package gitops

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/object"
)

// TestSkipMapBuildsEachKindsListsOnce checks the lists a guard's requests
// share: of holds the server-managed paths and a kind's ignored fields,
// edits adds the kind's control writes, for a kind configured twice, for
// one not configured, and for each family of control writes.
func TestSkipMapBuildsEachKindsListsOnce(t *testing.T) {
	kustomization := schema.GroupKind{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization"}
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	application := schema.GroupKind{Group: "argoproj.io", Kind: "Application"}
	m := newSkipMap([]IgnoredFields{
		{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas", "not a pointer"}},
		{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/template/metadata/annotations"}},
	})
	cases := map[string]struct {
		reason     string
		gk         schema.GroupKind
		of         []object.Pointer
		edits      []object.Pointer
		notInEdits []object.Pointer
	}{
		"ConfiguredKind": {
			reason:     "Both entries of a kind count, a pointer that does not parse is left out, and control annotations are no edit.",
			gk:         deployment,
			of:         MustPointers("/spec/replicas", "/spec/template/metadata/annotations", "/metadata/resourceVersion"),
			edits:      MustPointers("/spec/replicas", "/metadata/annotations/reconcile.fluxcd.io~1requestedAt"),
			notInEdits: MustPointers("/spec/suspend", "/operation"),
		},
		"FluxKind": {
			reason:     "A Flux kind's spec.suspend is a control write, not an ignored field.",
			gk:         kustomization,
			of:         MustPointers("/metadata/resourceVersion"),
			edits:      MustPointers("/spec/suspend", "/metadata/annotations/steward.dev~1suspended-by", "/metadata/resourceVersion"),
			notInEdits: MustPointers("/spec/replicas", "/operation"),
		},
		"Application": {
			reason:     "An Application's sync operation is a control write.",
			gk:         application,
			edits:      MustPointers("/operation", "/metadata/annotations/argocd.argoproj.io~1refresh"),
			notInEdits: MustPointers("/spec/suspend"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			of, edits := m.of(tc.gk), m.edits(tc.gk)
			for _, p := range tc.of {
				if !Skipped(p, of) {
					t.Errorf("%s\nof(%s) does not cover %s: %v", tc.reason, tc.gk, p, of)
				}
				if !Skipped(p, edits) {
					t.Errorf("%s\nedits(%s) does not cover %s, which of does", tc.reason, tc.gk, p)
				}
			}
			for _, p := range tc.edits {
				if !Skipped(p, edits) {
					t.Errorf("%s\nedits(%s) does not cover %s: %v", tc.reason, tc.gk, p, edits)
				}
			}
			for _, p := range tc.notInEdits {
				if Skipped(p, edits) {
					t.Errorf("%s\nedits(%s) covers %s", tc.reason, tc.gk, p)
				}
			}
			for _, p := range controlPaths(tc.gk) {
				if Skipped(p, of) && !Skipped(p, serverManaged) {
					t.Errorf("%s\nof(%s) covers the control write %s, which only edits should", tc.reason, tc.gk, p)
				}
			}
		})
	}
}
