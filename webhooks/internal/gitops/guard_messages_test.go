package gitops

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/webhooks/object"
)

func TestChangeList(t *testing.T) {
	for name, tc := range map[string]struct {
		reason string
		c      object.Changes
		want   string
	}{
		"all listed": {
			reason: "every changed path is named, in order",
			c:      object.Changes{Total: 2, First: []string{"/spec/replicas", "/data/a"}},
			want:   "/spec/replicas, /data/a",
		},
		"more than listed": {
			reason: "paths past the listed ones are counted",
			c:      object.Changes{Total: 7, First: []string{"/a", "/b"}},
			want:   "/a, /b and 5 more",
		},
		"none listed": {
			reason: "a count alone starts the sentence without a space",
			c:      object.Changes{Total: 3},
			want:   "and 3 more",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ChangeList(tc.c)); diff != "" {
				t.Errorf("%s\nChangeList(...): -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestDenialsReadAsOneSentenceEach pins the denials written into one
// builder word for word: the rule, the object, its owners and what their
// tool does, what changed, where the change belongs and the way out.
func TestDenialsReadAsOneSentenceEach(t *testing.T) {
	m := messages{rule: "fluxguard", tool: "Flux", breakGlass: "steward:break-glass"}
	owners := []Owner{
		{Name: "Kustomization flux-system/apps", Revert: "kustomize-controller reverts it at the next reconcile", Hint: "path ./apps"},
		{Name: "HelmRelease apps/podinfo"},
	}
	ref := Ref{Namespace: "apps", Name: "podinfo"}
	ref.Kind = "Deployment"
	for name, tc := range map[string]struct {
		got, want string
	}{
		"changed paths": {
			got:  m.changedPaths(ref, owners, object.Changes{Total: 6, First: []string{"/spec/replicas"}}),
			want: "fluxguard: Deployment apps/podinfo is managed by Kustomization flux-system/apps and HelmRelease apps/podinfo; kustomize-controller reverts it at the next reconcile. Changed: /spec/replicas and 5 more. Change it in the Git repository instead; path ./apps; in an emergency repeat the request as a member of steward:break-glass.",
		},
		"deleting, no break-glass group": {
			got:  messages{rule: "fleetguard", tool: "Fleet"}.deleting(Ref{Name: "web", GenerateName: "ignored"}, owners[1:]),
			want: "fleetguard:  web is managed by HelmRelease apps/podinfo; . Deleting it is refused: Fleet would re-create it. Remove it from the Git repository instead.",
		},
		"a name still to be generated": {
			got:  Ref{GenerateName: "web-", Namespace: "apps"}.String(),
			want: " apps/web-*",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}
