package object

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// viewSeeds are committed seeds for Views: a realistic object, odd but
// valid JSON (escaped and repeated keys, text that is not UTF-8,
// formatting that differs), invalid JSON, and nesting around the bounds.
var viewSeeds = []string{
	deployment,
	`{"a":1}`, `{ "a" : 1 }`, `{"a":1.0}`, `{"a":1e0}`, `{"a":-0}`,
	`{"\u0061":1}`, `{"a":"\u0041"}`, `{"a":"A"}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", "{\"\xff\":1}",
	`{"a":1,"a":2}`, `{"a":{"b":1},"a":{"c":1}}`, `{"a":null}`, `{"a":{}}`, `{"a":[]}`, `{"a":[{}]}`,
	`{"metadata":{"labels":{"app":"x","app":1}}}`,
	`{"metadata":{"labels":{"app":1,"app":"x"}}}`,
	`{"metadata":{"name":"a","name":2},"metadata":{"name":"b"}}`,
	`{"metadata":{"annotations":{"a\/b":"x"},"labels":{"a~b":""}}}`,
	`{"metadata":{"name":null,"labels":{"a":null}}}`,
	`{"Metadata":{"name":"a"}}`, `{"metadata":{"Name":"a"}}`, `{"metadata":{"namespaſe":"a"}}`,
	`{"metadata":{"labels":{"a":"1"},"labels":{"b":"2"}}}`, `{"metadata":{"labels":{"a":1}}}`,
	`{"metadata":null}`, `{"metadata":1}`, `{"kind":"x","metadata":{"uid":"u","name":"n"}}`,
	`{"metadata":{"deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"suspend":true}}`,
	`{"metadata":{"ownerReferences":[{"kind":"A","name":"a","uid":"1"},{"kind":2}]}}`,
	`{"metadata":"x"}`, `{"metadata":{"labels":[]}}`,
	`{"s":"a\\"b"}`, `{"s":"a\\\\"}`, `{"s":"\"}"}`, `{"l":[1,[2,[3]],{"x":"]"}]}`,
	`{"a":1}x`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":tru}`, `{"a":"\x01"}`, `{"a":"\u12"}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":1]`, `[1}`,
	` {} `, "\t[]\n", `"s"`, `0`, `null`, ``, ` `, "\u00a0", `{"a":1} {"b":2}`, `{"a":1}]`, ` {"a":1}x`,
	nestedA(maxDiffDepth-1, `{"x":1,"y":[1,2]}`), nestedA(maxDiffDepth+1, `{"x":1,"y":[1,2]}`),
	nestedA(maxDiffDepth+1, `1`), nestedA(1100, `1`),
	strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000),
}

// fuzzSkip are the paths the differential targets skip.
var fuzzSkip = []Pointer{{"spec", "replicas"}, {"metadata", "annotations", "a/b"}, {"0"}, {"a", "1"}, {"a", "b"}, {"x"}, {"status"}, {"metadata", "managedFields"}}

// FuzzViewMatchesDecoding holds Views to the decoding reading
// (mapread_test.go). On any pair of texts, Err fails exactly when
// decoding fails, with the same error, and otherwise the Views read the
// same metadata, owner references, fields and changed paths, and compare
// equal exactly when the decoded values are deeply equal. Diff finds no
// change between an object and itself and as many in both directions.
// Nothing may panic.
func FuzzViewMatchesDecoding(f *testing.F) {
	for _, s := range viewSeeds {
		f.Add(s, deployment)
		f.Add(deployment, s)
		f.Add(s, `{"a":2,"metadata":{"name":"b","labels":{"app":"y"}}}`)
	}
	f.Add(`{"metadata":{"ownerReferences":[{"kind":"A","name":"a","uid":"1"}]}}`, `{"metadata":{"ownerReferences":[{"kind":"A","name":"a","uid":"1"},{"kind":"B","name":"b","uid":"2"}]}}`)
	f.Fuzz(checkViews)
}

func checkViews(t *testing.T, a, b string) {
	va, vb := New([]byte(a)), New([]byte(b))
	for _, c := range []struct {
		text string
		v    *View
	}{{a, va}, {b, vb}} {
		want, wantErr := decodeObject([]byte(c.text))
		if d := cmp.Diff(errString(wantErr), errString(c.v.Err())); d != "" {
			t.Fatalf("New(%q).Err(): the error differs from decoding's: -decoding, +view:\n%s", c.text, d)
		}
		if wantErr != nil {
			if c.v.Name() != "" || c.v.Labels() != nil || c.v.Field() != nil || c.v.ServerForm() {
				t.Fatalf("New(%q) is not an object but reads as one", c.text)
			}
			continue
		}
		if d := cmp.Diff(metaFromMap(want), metaOfView(c.v), cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("the metadata of %q: the view disagrees with decoding: -decoded, +view:\n%s", c.text, d)
		}
		if d := cmp.Diff(ownersFromMap(want), c.v.OwnerReferences(), cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("the owner references of %q: the view disagrees with decoding: -decoded, +view:\n%s", c.text, d)
		}
		labels := metaFromMap(want).Labels
		for k, val := range labels {
			if got, ok := c.v.Label(k); !ok || got != val {
				t.Fatalf("New(%q).Label(%q) = %q, %v; decoding reads %q", c.text, k, got, ok, val)
			}
		}
		keys := append([]string{"app", "absent"}, slices.Sorted(maps.Keys(labels))...)
		wantOf := map[string]string{}
		for _, k := range keys {
			if val, ok := labels[k]; ok {
				wantOf[k] = val
			}
		}
		if d := cmp.Diff(wantOf, c.v.LabelsOf(keys...), cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("New(%q).LabelsOf(%q): -decoded, +view:\n%s", c.text, keys, d)
		}
		annotations := metaFromMap(want).Annotations
		for _, k := range append(keys, slices.Sorted(maps.Keys(annotations))...) {
			if _, want := labels[k]; c.v.HasLabel(k) != want {
				t.Fatalf("New(%q).HasLabel(%q) = %v; decoding reads a label: %v", c.text, k, !want, want)
			}
			if _, want := annotations[k]; c.v.HasAnnotation(k) != want {
				t.Fatalf("New(%q).HasAnnotation(%q) = %v; decoding reads an annotation: %v", c.text, k, !want, want)
			}
		}
	}
	if va.Err() != nil || vb.Err() != nil {
		return
	}
	x, _ := decodeObject([]byte(a))
	y, _ := decodeObject([]byte(b))
	for _, limit := range []int{5, 1 << 20} {
		if d := cmp.Diff(mapDiff(x, y, fuzzSkip, limit), Diff(va, vb, fuzzSkip, limit), cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("the changes %q -> %q: the view disagrees with decoding: -decoded, +view:\n%s", a, b, d)
		}
	}
	if c := Diff(va, va, fuzzSkip, 5); c.Total != 0 {
		t.Fatalf("%q differs from itself: %v", a, c.First)
	}
	if ab, ba := Diff(va, vb, nil, 0), Diff(vb, va, nil, 0); ab.Total != ba.Total {
		t.Fatalf("Diff is not symmetric: %d vs %d changes", ab.Total, ba.Total)
	}
	if got, want := Equal(va, vb), reflect.DeepEqual(x, y); got != want {
		t.Fatalf("Equal(%q, %q) = %v, decoded values deeply equal: %v", a, b, got, want)
	}
	if got, want := Equal(va, vb, "spec"), reflect.DeepEqual(x["spec"], y["spec"]); got != want {
		t.Fatalf("Equal(%q, %q, spec) = %v, decoded specs deeply equal: %v", a, b, got, want)
	}
}

// FuzzDiffValues holds Diff to the decoded diff on any two valid JSON
// values, objects or not, as Diff meets them below an object's top.
func FuzzDiffValues(f *testing.F) {
	for _, s := range viewSeeds {
		f.Add(s, `{"a":[1,{"b":2}]}`)
		f.Add(`[1,2,{"a":null}]`, s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		va, vb := valueView(a), valueView(b)
		if va == nil || vb == nil {
			return
		}
		x, y := decodeAny(t, a), decodeAny(t, b)
		for _, limit := range []int{5, 1 << 20} {
			d := differ{skip: fuzzSkip, limit: limit, path: make(Pointer, 0, 16), views: [2]*View{va, vb}}
			d.walk(va.doc, vb.doc, 0)
			if diff := cmp.Diff(mapDiff(x, y, fuzzSkip, limit), d.out, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("the changes %q -> %q: the raw walk disagrees with decoding: -decoded, +raw:\n%s", a, b, diff)
			}
		}
	})
}

// valueView indexes any valid JSON value as a View indexes objects, or
// returns nil.
func valueView(s string) *View {
	v := New([]byte(s))
	v.read = true
	if !v.ix.validJSON(v.raw, maxNesting) {
		return nil
	}
	v.doc = trimSpace(v.raw)
	return v
}

// decodeAny decodes one JSON value the way decodeObject does, whatever
// its type.
func decodeAny(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("validJSON accepted %q, which does not decode: %v", s, err)
	}
	return v
}

// FuzzServerForm is the differential check of ServerForm: whatever it
// accepts, encoding/json decodes without error to what the View reads;
// whatever it refuses, FormErr explains.
func FuzzServerForm(f *testing.F) {
	for _, s := range viewSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := New([]byte(s))
		if !v.ServerForm() {
			if v.FormErr() == nil {
				t.Fatalf("New(%q): not in the server's form, and FormErr says nothing", s)
			}
			return
		}
		if err := v.FormErr(); err != nil {
			t.Fatalf("New(%q) is in the server's form, FormErr: %v", s, err)
		}
		var o struct {
			Metadata struct {
				Name              string            `json:"name"`
				GenerateName      string            `json:"generateName"`
				Namespace         string            `json:"namespace"`
				DeletionTimestamp json.RawMessage   `json:"deletionTimestamp"`
				Labels            map[string]string `json:"labels"`
				Annotations       map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec json.RawMessage `json:"spec"`
		}
		if err := json.Unmarshal(v.Field(), &o); err != nil {
			t.Fatalf("ServerForm(%q) is true, encoding/json fails: %v", s, err)
		}
		m := o.Metadata
		want := []any{m.Name, m.GenerateName, m.Namespace, m.DeletionTimestamp != nil && string(m.DeletionTimestamp) != "null", m.Labels, m.Annotations, string(o.Spec)}
		got := []any{v.Name(), v.GenerateName(), v.Namespace(), v.Deleting(), v.Labels(), v.Annotations(), string(v.Field("spec"))}
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("ServerForm(%q): the view disagrees with encoding/json: -decoded, +view:\n%s", s, d)
		}
	})
}
