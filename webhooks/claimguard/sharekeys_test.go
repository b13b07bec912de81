package claimguard

import (
	"fmt"
	"testing"
	"unsafe"
)

// sameString reports whether two strings share their bytes, not only
// their contents.
func sameString(a, b string) bool {
	return a == b && len(a) > 0 && unsafe.StringData(a) == unsafe.StringData(b)
}

func TestTransformSharesKeysWithCachedObjects(t *testing.T) {
	// A deleting composite and its deleting MRs: MRs keep their claim
	// only while they are being deleted.
	const i = deletingEvery
	for _, mrsFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("MRsFirst=%v", mrsFirst), func(t *testing.T) {
			c := newCluster()
			synced := func() bool { return true }
			xrs := &watch{gk: pgXRD.compositeGK(), gvr: pgXRGVR, role: roleComposite, indexer: newObjectStore(), owners: c.owners, synced: synced}
			mrs := make([]*watch, 2)
			for k := range mrs {
				mrs[k] = &watch{gk: benchGK(k), gvr: pgXRGVR, role: roleManaged, indexer: newObjectStore(), owners: c.owners, synced: synced}
			}
			var x *object
			var composed []*object
			addXR := func() {
				o, err := transform(realisticXR(i, oneOfEachKind))
				if err != nil {
					t.Fatal(err)
				}
				x = o.(*object)
				store(xrs, x)
			}
			if !mrsFirst {
				addXR()
			}
			for k := range mrs {
				o, err := transform(realisticMR(i, k))
				if err != nil {
					t.Fatal(err)
				}
				composed = append(composed, o.(*object))
				store(mrs[k], o.(*object))
			}
			if mrsFirst {
				addXR()
			}
			a, b := composed[0], composed[1]
			if !sameString(a.owner, b.owner) {
				t.Errorf("two objects of one composite keep two copies of its owner key %q", a.owner)
			}
			if !sameString(a.claim(), b.claim()) || !sameString(a.claim(), x.claim()) {
				t.Errorf("a composite and its objects keep several copies of their claim key %q, %q, %q", x.claim(), a.claim(), b.claim())
			}
			for i, r := range x.refs()[:len(composed)] {
				if got := sameString(r.name, composed[i].name()); got != mrsFirst {
					t.Errorf("the composite's reference to %s shares the object's name: %v, want %v (only when the object was cached first)", r.name, got, mrsFirst)
				}
			}
			// What the checks read is unchanged.
			want, _ := transform(realisticMR(i, 1))
			if w := want.(*object); w.owner != b.owner || w.claim() != b.claim() || w.id != b.id {
				t.Errorf("sharing changed an object: got %+v, want %+v", b, w)
			}
		})
	}
}

func TestLiveManagedResourcesKeepNoClaim(t *testing.T) {
	o, err := transform(realisticMR(deletingEvery+1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if mr := o.(*object); mr.more != nil || mr.claim() != "" || mr.owner == "" || mr.externalName() == "" {
		t.Errorf("a live MR is cached as %+v (more %+v), want its owner and external name and nothing more", mr, mr.more)
	}
}

// TestFirstListsShareOwnerKeysBeforeAnythingIsStored: while the first
// lists arrive, objects of one composite decoded one after another (of
// several kinds) share its owner key though none is stored yet; once the
// caches are synced the table is gone and nothing more is shared there.
func TestFirstListsShareOwnerKeysBeforeAnythingIsStored(t *testing.T) {
	d := &discoverer{listed: newListedKeys()}
	decode := func(k int) *object {
		o, err := d.transform(roleManaged)(realisticMR(7, k))
		if err != nil {
			t.Fatal(err)
		}
		return o.(*object)
	}
	a, b := decode(0), decode(1)
	if !sameString(a.owner, b.owner) {
		t.Errorf("two objects of one composite listed before either is stored keep two copies of its owner key %q", a.owner)
	}
	other, err := d.transform(roleManaged)(realisticMR(8, 0))
	if err != nil {
		t.Fatal(err)
	}
	if o := other.(*object); o.owner == a.owner {
		t.Fatalf("objects of two composites have one owner key %q", o.owner)
	}
	d.listed.done()
	if d.listed.sharing() {
		t.Fatal("the table is kept once done")
	}
	if c := decode(2); sameString(c.owner, a.owner) {
		t.Error("an object decoded after the first lists took its owner key from the dropped table")
	}
}
