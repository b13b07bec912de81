package fleetguard

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/stewardhq/steward/webhooks/internal/rawjson"
)

// rawSeeds are committed seeds for the raw JSON reader: odd but valid
// JSON (escaped and repeated keys, text that is not UTF-8, formatting that
// differs), invalid JSON, and nesting around the bounds.
var rawSeeds = []string{
	`{"a":1}`, `{ "a" : 1 }`, `{"a":1.0}`, `{"a":1e0}`, `{"a":-0}`,
	`{"\u0061":1}`, `{"a":"\u0041"}`, `{"a":"A"}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", "{\"\xff\":1}",
	`{"a":1,"a":2}`, `{"a":{"b":1},"a":{"c":1}}`, `{"a":null}`, `{"a":{}}`, `{"a":[]}`, `{"a":[{}]}`,
	`{"metadata":{"labels":{"objectset.rio.cattle.io/hash":"x","objectset.rio.cattle.io/hash":1}}}`,
	`{"metadata":{"labels":{"objectset.rio.cattle.io/hash":1,"objectset.rio.cattle.io/hash":"x"}}}`,
	`{"metadata":{"name":"a","name":2},"metadata":{"name":"b"}}`,
	`{"metadata":{"annotations":{"objectset.rio.cattle.io\/id":"default-x"},"labels":{"objectset.rio.cattle.io~hash":""}}}`,
	`{"metadata":"x"}`, `{"metadata":{"labels":[]}}`,
	`{"s":"a\\"b"}`, `{"s":"a\\\\"}`, `{"s":"\"}"}`, `{"l":[1,[2,[3]],{"x":"]"}]}`,
	`{"a":1}x`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":tru}`, `{"a":"\x01"}`, `{"a":"\u12"}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":1]`, `[1}`,
	` {} `, "\t[]\n", `"s"`, `0`, `null`, ``, ` `, "\u00a0", `{"a":1} {"b":2}`, `{"a":1}]`, ` {"a":1}x`,
	nested(maxDiffDepth-1, `{"x":1,"y":[1,2]}`), nested(maxDiffDepth+1, `{"x":1,"y":[1,2]}`),
	nested(maxDiffDepth+1, `1`), nested(1100, `1`),
}

// TestRawMatchesMapDiffAtTheDepthLimit is FuzzRawMatchesMapDiff at
// encoding/json's nesting limit and just past it: seeds that deep would
// leave the fuzzer little time for anything else.
func TestRawMatchesMapDiffAtTheDepthLimit(t *testing.T) {
	deepList := func(n int) string { return strings.Repeat(`[`, n) + strings.Repeat(`]`, n) }
	for _, p := range [][2]string{
		{nested(maxScanDepth, `1`), nested(maxScanDepth, `2`)},
		{nested(maxScanDepth+1, `1`), webDeployment},
		{webDeployment, nested(maxScanDepth+1, `1`)},
		{`{"a":` + deepList(maxScanDepth-1) + `}`, webDeployment},
		{deepList(maxScanDepth), webDeployment},
	} {
		checkUpdate(t, p[0], p[1])
	}
}

// rawPairs are pairs of objects that differ the ways updates do.
func rawPairs() [][2]string {
	enc := func(o map[string]any) string {
		b, err := json.Marshal(o)
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	base := enc(obj(webDeployment))
	return [][2]string{
		{webDeployment, base},
		{base, enc(obj(webDeployment, container(0, "image", "x")))},
		{base, enc(obj(webDeployment, set(2, "status", "readyReplicas"), set("1", "metadata", "resourceVersion")))},
		{base, enc(obj(webDeployment, del("metadata", "labels", LabelHash), set("v1, Kind=Namespace", "metadata", "annotations", AnnotationOwnerGVK)))},
		{base, enc(obj(webDeployment, set(map[string]any{"a": []any{1, map[string]any{}}}, "spec", "template", "spec", "affinity")))},
		{base, enc(obj(webDeployment, set(nil, "spec", "template"), set([]any{}, "spec", "selector")))},
		{base, strings.Replace(base, `"spec":{`, `"spec":{"x":1,"x":2,`, 1)},
		{`{"a":[1,2,3]}`, `{"a":[3,2,1,0]}`},
		{`{"a":{"b":1}}`, `{"a":[1]}`},
		{`{"a":null}`, `{"a":[]}`},
		{`{"a":[]}`, `{"a":{}}`},
		{nested(maxDiffDepth-3, `{"x":1}`), nested(maxDiffDepth-3, `{"x":2,"y":{"z":[1]}}`)},
		{nested(maxDiffDepth+3, `1`), nested(maxDiffDepth+3, `2`)},
		{nested(maxDiffDepth+3, `{"x":"a","y":[1,{}]}`), nested(maxDiffDepth+3, `{"y":[1,{}],"x":"\u0061"}`)},
		{nested(maxDiffDepth+3, `{"x":[1,{}]}`), nested(maxDiffDepth+3, `{"x":[1,null]}`)},
		{`{"a":"x"}trailing`, `{"a":"y"}`},
	}
}

// fuzzSkip are the paths the differential targets skip.
var fuzzSkip = append(mustPointers("/spec/replicas", "/metadata/annotations/a~1b", "/0", "/a/1", "/a/b", "/x"), serverManaged...)

// decodeAny decodes one JSON value the way decodeObject does, whatever
// its type.
func decodeAny(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("rawjson.Valid accepted %q, which does not decode: %v", s, err)
	}
	return v
}

// diffRaw indexes two valid JSON values of any type as rawDoc.read does
// objects, and diffs them.
func diffRaw(t *testing.T, a, b string, skip []pointer, limit int) changes {
	t.Helper()
	var docs [2]rawDoc
	for i, s := range []string{a, b} {
		raw := []byte(s)
		if !docs[i].ix.Valid(raw, maxScanDepth) {
			t.Fatalf("rawjson.Valid accepted %q, an Index refuses it", s)
		}
		docs[i].raw = rawjson.TrimSpace(raw)
	}
	return diffDocs(&docs[0], &docs[1], skip, limit)
}

// FuzzRawMatchesMapDiff holds the raw reading of an update to the
// decoding one (mapdiff_test.go). On any pair of texts, readObjects fails
// exactly when decoding fails, with the same error, and otherwise reads
// the same ownership, the same added owners and the same changed paths.
// On any pair of valid JSON values, objects or not, diffDocs reports
// exactly what diff reports of the decoded values. Nothing may panic.
func FuzzRawMatchesMapDiff(f *testing.F) {
	for _, p := range rawPairs() {
		f.Add(p[0], p[1])
		f.Add(p[1], p[0])
	}
	for _, s := range append(rawSeeds, fuzzSeeds...) {
		f.Add(s, webDeployment)
		f.Add(s, `{"a":2,"metadata":{"name":"b","labels":{"objectset.rio.cattle.io/hash":"y"}}}`)
	}
	f.Add(`{"metadata":{"ownerReferences":[{"kind":"A","name":"a","uid":"1"}]}}`, `{"metadata":{"ownerReferences":[{"kind":"A","name":"a","uid":"1"},{"kind":"B","name":"b","uid":"2"}]}}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		checkUpdate(t, a, b)
		if !rawjson.Valid([]byte(a), maxScanDepth) || !rawjson.Valid([]byte(b), maxScanDepth) {
			return
		}
		x, y := decodeAny(t, a), decodeAny(t, b)
		for _, limit := range []int{listedPaths, 1 << 20} {
			want := diff(x, y, fuzzSkip, limit)
			got := diffRaw(t, a, b, fuzzSkip, limit)
			if d := cmp.Diff(want, got, cmp.AllowUnexported(changes{}), cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("diffDocs(%q, %q) disagrees with diff: -diff, +diffDocs:\n%s", a, b, d)
			}
		}
	})
}

// checkUpdate checks that an update's objects read raw read as decoded.
func checkUpdate(t *testing.T, a, b string) {
	t.Helper()
	want, wantErr := readMapObjects([]byte(a), []byte(b))
	got, gotErr := readObjects([]byte(a), []byte(b))
	if d := cmp.Diff(errString(wantErr), errString(gotErr)); d != "" {
		t.Fatalf("readObjects(%q, %q): the error differs from decoding's: -decoding, +raw:\n%s", a, b, d)
	}
	if wantErr != nil {
		return
	}
	wantOld, wantNew := want.meta()
	gotOld, gotNew := got.meta()
	if d := cmp.Diff([][]any{ownership(wantOld), ownership(wantNew)}, [][]any{ownership(gotOld), ownership(gotNew)}); d != "" {
		t.Fatalf("the metadata of %q -> %q: the raw reading disagrees with the decoded one: -decoded, +raw:\n%s", a, b, d)
	}
	if d := cmp.Diff(want.addedOwners(), got.addedOwners(), cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("addedOwners of %q -> %q: the raw reading disagrees with the decoded one: -decoded, +raw:\n%s", a, b, d)
	}
	for _, limit := range []int{listedPaths, 1 << 20} {
		if d := cmp.Diff(want.diff(fuzzSkip, limit), got.diff(fuzzSkip, limit), cmp.AllowUnexported(changes{}), cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("the changes %q -> %q: the raw reading disagrees with the decoded one: -decoded, +raw:\n%s", a, b, d)
		}
	}
}

// ownership is everything the rule reads of an objectMeta.
func ownership(m objectMeta) []any {
	return []any{m.Name, m.GenerateName, m.Namespace, m.managed(), m.appliedWithOwner(), m.ownershipKeys(), m.owner()}
}

// FuzzValidJSON checks what the raw reading relies on, at fleetguard's
// nesting bound: rawjson.Valid accepts nothing json.Valid rejects, and the
// members rawjson splits a valid object into, once SortMembers has kept
// the last of each key, are those encoding/json decodes. (That
// rawjson.Valid accepts all valid JSON up to the bound, rawjson's own
// tests check.)
func FuzzValidJSON(f *testing.F) {
	for _, s := range append(rawSeeds, fuzzSeeds...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !rawjson.Valid([]byte(s), maxScanDepth) {
			return
		}
		if !json.Valid([]byte(s)) {
			t.Fatalf("rawjson.Valid(%q) = true, json.Valid = false", s)
		}
		checkSplit(t, bytes.TrimSpace([]byte(s)))
	})
}

// checkSplit checks that splitting a valid value yields the members
// encoding/json finds.
func checkSplit(t *testing.T, v []byte) {
	t.Helper()
	switch rawKind(v) {
	case rawObject:
		var want map[string]json.RawMessage
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatal(err)
		}
		ms := rawjson.SplitObject(v, nil)
		ms = rawjson.SortMembers(ms)
		if len(ms) != len(want) {
			t.Fatalf("SplitObject(%q): %d distinct keys, encoding/json finds %d", v, len(ms), len(want))
		}
		for _, m := range ms {
			w, ok := want[string(m.Key)]
			if !ok || !bytes.Equal(w, m.Value) {
				t.Fatalf("SplitObject(%q): member %q = %q, encoding/json: %q", v, m.Key, m.Value, w)
			}
		}
	case rawList:
		var want []json.RawMessage
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatal(err)
		}
		ms := rawjson.SplitArray(v, nil)
		if len(ms) != len(want) {
			t.Fatalf("SplitArray(%q): %d elements, encoding/json finds %d", v, len(ms), len(want))
		}
		for i, m := range ms {
			if !bytes.Equal(want[i], m.Value) {
				t.Fatalf("SplitArray(%q): element %d = %q, encoding/json: %q", v, i, m.Value, want[i])
			}
		}
	}
}

// FuzzStrictMeta is the differential check of the create and delete
// path: whatever strictMetaFromRaw reads, encoding/json decodes without
// error to the same ownership.
func FuzzStrictMeta(f *testing.F) {
	for _, s := range append(append(rawSeeds, fuzzSeeds...),
		`{"metadata":{"name":null,"labels":{"objectset.rio.cattle.io/hash":null}}}`,
		`{"Metadata":{"name":"a"}}`, `{"metadata":{"Name":"a"}}`, `{"metadata":{"namespaſe":"a"}}`,
		`{"metadata":{"labels":{"a":"1"},"labels":{"b":"2"}}}`, `{"metadata":{"labels":{"a":1}}}`,
		`{"metadata":{"annotations":{"objectset.rio.cattle.io/id":"default-x","objectset.rio.cattle.io/id":"default-y"}}}`,
		`{"metadata":null}`, `{"metadata":1}`, `{"kind":"x","metadata":{"uid":"u","name":"n"}}`,
	) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := strictMetaFromRaw([]byte(s))
		if !ok {
			return
		}
		want, err := decodeMetaJSON([]byte(s))
		if err != nil {
			t.Fatalf("strictMetaFromRaw(%q) read it, decodeMetaJSON fails: %v", s, err)
		}
		if d := cmp.Diff(ownership(want), ownership(got)); d != "" {
			t.Fatalf("strictMetaFromRaw(%q) disagrees with decodeMetaJSON: -decodeMetaJSON, +strictMetaFromRaw:\n%s", s, d)
		}
	})
}
