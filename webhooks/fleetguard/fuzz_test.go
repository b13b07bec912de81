package fleetguard

import (
	"context"
	"strings"
	"testing"

	"github.com/stewardhq/steward/webhooks/admissiontest"
)

// fuzzSeeds are committed seeds: realistic objects, odd JSON, and deeply
// nested input.
var fuzzSeeds = []string{
	webDeployment,
	`{}`,
	`{"metadata": {"labels": {"objectset.rio.cattle.io/hash": "x"}}}`,
	`{"metadata": {"labels": {"objectset.rio.cattle.io/hash": 1}}}`,
	`{"metadata": null, "spec": [1, "2", {"3": null}]}`,
	`{"metadata": {"annotations": {"objectset.rio.cattle.io/owner-gvk": "v1, Kind=Namespace"}, "labels": {"objectset.rio.cattle.io/hash": ""}}}`,
	`{"spec": {"replicas": 9007199254740993}}`,
	`{"spec": {"replicas": "many"}}`,
	`[]`, `null`, `"string"`, `{`, ``,
	nested(5000, `1`),
	strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000),
}

// FuzzDiff checks the object reader and the structural diff: no panic on
// any input, no change between an object and itself, and the same number of
// changes in both directions.
func FuzzDiff(f *testing.F) {
	for _, a := range fuzzSeeds {
		f.Add(a, webDeployment)
		f.Add(webDeployment, a)
	}
	skip := append(mustPointers("/spec/replicas", "/metadata/annotations/a~1b", "/0"), serverManaged...)
	f.Fuzz(func(t *testing.T, a, b string) {
		ab, errA := readObjects([]byte(a), []byte(b))
		ba, errB := readObjects([]byte(b), []byte(a))
		if errA != nil || errB != nil {
			return
		}
		self := objects{old: ab.old, new: ab.old}
		if c := self.diff(skip, listedPaths); c.total != 0 {
			t.Fatalf("an object differs from itself: %v", c.first)
		}
		cab, cba := ab.diff(skip, listedPaths), ba.diff(skip, listedPaths)
		if cab.total != cba.total {
			t.Fatalf("diff is not symmetric: %d vs %d changes", cab.total, cba.total)
		}
		for _, p := range cab.first {
			if _, err := parsePointer(p); err != nil {
				t.Fatalf("reported path %q is not a JSON pointer: %v", p, err)
			}
		}
		old, _ := ab.meta()
		_ = old.owner()
	})
}

// FuzzDecoders feeds arbitrary bytes to every decoder this rule has.
func FuzzDecoders(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := decodeMeta([]byte(s)); err == nil {
			_ = m.owner()
			_ = m.ownershipKeys()
		}
		_, _ = decodeScale([]byte(s))
		_, _ = readObjects([]byte(s), []byte(s))
	})
}

// FuzzParsePointer checks that every pointer that parses renders back to
// itself, so reported and configured paths use one spelling.
func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{"", "/", "/spec/replicas", "/a~0b~1c", "/~01", "a", "/~", "/~2", "//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePointer(s)
		if err != nil {
			return
		}
		if got := p.String(); got != s {
			t.Fatalf("parsePointer(%q).String() = %q", s, got)
		}
	})
}

// FuzzHandle runs whole requests with arbitrary objects through the
// handler: it must answer, never panic.
func FuzzHandle(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, webDeployment, uint8(0))
		f.Add(webDeployment, s, uint8(1))
	}
	r := ignoringReplicas()
	f.Fuzz(func(t *testing.T, oldObj, newObj string, op uint8) {
		var req *admissiontest.Request
		switch op % 4 {
		case 0:
			req = admissiontest.Create(deploymentsGVR, "Deployment", []byte(newObj))
		case 1:
			req = admissiontest.Update(deploymentsGVR, "Deployment", []byte(oldObj), []byte(newObj))
		case 2:
			req = admissiontest.Delete(deploymentsGVR, "Deployment", []byte(oldObj))
		case 3:
			req = admissiontest.Update(deploymentsGVR, "Scale", []byte(oldObj), []byte(newObj)).SubResource("scale")
		}
		resp := r.Handle(context.Background(), req.Build())
		if resp.Result == nil {
			t.Fatal("response without a result")
		}
	})
}
