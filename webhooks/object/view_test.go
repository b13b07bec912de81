package object

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestResetForgetsTheLastObject: a View reused for object after object,
// as the serving layer reuses them, reads each exactly as a new View
// does, whatever it was asked of the object before.
func TestResetForgetsTheLastObject(t *testing.T) {
	var reused, other View
	for i, a := range viewSeeds {
		b := viewSeeds[(i+1)%len(viewSeeds)]
		reused.Reset([]byte(a))
		other.Reset([]byte(b))
		fresh, freshOther := New([]byte(a)), New([]byte(b))
		if d := cmp.Diff(errString(fresh.Err()), errString(reused.Err())); d != "" {
			t.Fatalf("seed %d: Err of a reused view: -new, +reused:\n%s", i, d)
		}
		if d := cmp.Diff(metaOfView(fresh), metaOfView(&reused), cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("seed %d: metadata of a reused view: -new, +reused:\n%s", i, d)
		}
		if d := cmp.Diff(Diff(fresh, freshOther, fuzzSkip, 5), Diff(&reused, &other, fuzzSkip, 5), cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("seed %d: Diff of reused views: -new, +reused:\n%s", i, d)
		}
		if Equal(fresh, freshOther, "spec") != Equal(&reused, &other, "spec") {
			t.Fatalf("seed %d: Equal of reused views differs from new ones'", i)
		}
	}
	// Resetting to nothing holds nothing of the last object.
	reused.Reset(nil)
	if reused.Present() || reused.doc != nil || reused.ix.data != nil {
		t.Fatal("a view reset to no object still holds the last one")
	}
	for _, ms := range [][]rawMember{reused.top, reused.meta, reused.labels, reused.annotations, reused.scratch[:cap(reused.scratch)]} {
		for _, m := range ms[:cap(ms)] {
			if m.Key != nil || m.Value != nil {
				t.Fatal("a view reset to no object still points into the last one's text")
			}
		}
	}
}
