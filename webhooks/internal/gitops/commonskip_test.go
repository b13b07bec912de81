package gitops

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/webhooks/object"
)

func TestCommonSkip(t *testing.T) {
	owner := func(pointers ...string) Owner { return Owner{Skip: MustPointers(pointers...)} }
	cases := map[string]struct {
		reason string
		owners []Owner
		want   []object.Pointer
	}{
		"NoOwner": {
			reason: "Without owners nothing is ignored.",
		},
		"OneOwner": {
			reason: "One owner's paths are its own.",
			owners: []Owner{owner("/spec/replicas", "/data/generated")},
			want:   MustPointers("/spec/replicas", "/data/generated"),
		},
		"OneOwnerIgnoresNothing": {
			reason: "An owner that ignores nothing reverts every change.",
			owners: []Owner{owner("/spec/replicas"), owner()},
		},
		"Disjoint": {
			reason: "Paths only one owner ignores stay guarded.",
			owners: []Owner{owner("/spec/replicas"), owner("/data")},
		},
		"NestedEitherWay": {
			reason: "Under a path one owner ignores whole, the other's narrower path is ignored by both.",
			owners: []Owner{owner("/spec", "/data/a"), owner("/spec/replicas", "/data")},
			want:   MustPointers("/data/a", "/spec/replicas"),
		},
		"Same": {
			reason: "A path both ignore is kept once.",
			owners: []Owner{owner("/spec/replicas"), owner("/spec/replicas")},
			want:   MustPointers("/spec/replicas"),
		},
		"ThreeOwners": {
			reason: "Every owner must ignore a path.",
			owners: []Owner{owner("/spec"), owner("/spec/replicas", "/spec/paused"), owner("/spec/replicas")},
			want:   MustPointers("/spec/replicas"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, commonSkip(tc.owners)); diff != "" {
				t.Errorf("%s\ncommonSkip(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
