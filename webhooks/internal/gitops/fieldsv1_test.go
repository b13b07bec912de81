package gitops

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/webhooks/object"
)

// TestWalkFieldsServesBothReaders walks the same fieldsV1 trees for the
// guards (the key paths an entry owns, ownedKeys) and for the audit (the
// fields written outside Git, DriftOf): one walker, two visitors, each
// seeing what it always saw.
func TestWalkFieldsServesBothReaders(t *testing.T) {
	const item = `"k:{\"name\":\"web\"}"`
	tests := map[string]struct {
		reason    string
		tree      string
		skip      []object.Pointer
		wantKeys  []string
		wantDrift []string
	}{
		"LeavesInKeyOrder": {
			reason:    "leaves are owned whole, members walked in the order of their keys",
			tree:      `{"f:spec":{"f:replicas":{},"f:paused":{}}}`,
			wantKeys:  []string{"f:spec/f:paused", "f:spec/f:replicas"},
			wantDrift: []string{"/spec/paused", "/spec/replicas"},
		},
		"ItemOwnedAsItselfBesideItsFields": {
			reason:    "an item's \".\" is a key path of its own for the guards, and no field for the audit",
			tree:      `{"f:spec":{"f:containers":{` + item + `:{".":{},"f:image":{}}}}}`,
			wantKeys:  []string{`f:spec/f:containers/k:{"name":"web"}`, `f:spec/f:containers/k:{"name":"web"}/f:image`},
			wantDrift: []string{"/spec/containers/[name=web]/image"},
		},
		"ItemOwnedAsItselfAlone": {
			reason:    "an item with nothing below its \".\" is owned whole by both",
			tree:      `{"f:spec":{"f:containers":{` + item + `:{".":{}}}}}`,
			wantKeys:  []string{`f:spec/f:containers/k:{"name":"web"}`},
			wantDrift: []string{"/spec/containers/[name=web]"},
		},
		"ServerManagedAndSkippedLeftOutOfDrift": {
			reason:    "the audit prunes server-managed fields and skipped ones; the guards see every key",
			tree:      `{"f:metadata":{"f:resourceVersion":{}},"f:spec":{"f:replicas":{},"f:paused":{}},"f:status":{"f:ready":{}}}`,
			skip:      []object.Pointer{{"spec", "replicas"}},
			wantKeys:  []string{"f:metadata/f:resourceVersion", "f:spec/f:paused", "f:spec/f:replicas", "f:status/f:ready"},
			wantDrift: []string{"/spec/paused"},
		},
		"NoObjectNoField": {
			reason: "a tree that is no object owns nothing",
			tree:   `[1,2]`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var k keyPaths
			walkFields([]byte(tc.tree), 0, 0, object.Members, &k)
			var keys []string
			for _, p := range k.out {
				keys = append(keys, strings.Join(p, "/"))
			}
			if diff := cmp.Diff(tc.wantKeys, keys); diff != "" {
				t.Errorf("%s: key paths (-want +got):\n%s", tc.reason, diff)
			}
			w := fieldWalk{limit: MaxDriftFields, skip: tc.skip}
			w.raw([]byte(tc.tree))
			if diff := cmp.Diff(tc.wantDrift, w.first); diff != "" {
				t.Errorf("%s: drifted fields (-want +got):\n%s", tc.reason, diff)
			}
			if w.total != len(tc.wantDrift) {
				t.Errorf("%s: %d drifted fields counted, want %d", tc.reason, w.total, len(tc.wantDrift))
			}
		})
	}
}

// TestWalkFieldsDepth: the audit's walk stops maxFieldDepth keys down and
// counts what is there as one field; the guards' walk has no bound.
func TestWalkFieldsDepth(t *testing.T) {
	tree := strings.Repeat(`{"f:a":`, maxFieldDepth+2) + "{}" + strings.Repeat("}", maxFieldDepth+2)
	var k keyPaths
	walkFields([]byte(tree), 0, 0, object.Members, &k)
	if len(k.out) != 1 || len(k.out[0]) != maxFieldDepth+2 {
		t.Errorf("the guards' walk owns %v, want one path %d keys deep", k.out, maxFieldDepth+2)
	}
	w := fieldWalk{limit: MaxDriftFields}
	w.raw([]byte(tree))
	if w.total != 1 || strings.Count(w.first[0], "/") != maxFieldDepth {
		t.Errorf("the audit's walk reports %v, want one field %d keys deep", w.first, maxFieldDepth)
	}
}
