package apimigration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/rawjson"
)

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzHandle feeds arbitrary objects through the reader and the marking
// logic. Whatever the input, the rule must not panic; it answers as the
// decoding path (decoding_test.go) does, but for objects not in the API
// server's form, which it refuses (see checkMark); a patch may touch only
// metadata.annotations; and applying the patch and asking again must ask
// for nothing more (the reinvocation fixed point).
func FuzzHandle(f *testing.F) {
	stored := marked(HelmGroup+"/v2beta1", earlier)
	seeds := []struct {
		obj, old []byte
		version  string
		update   bool
	}{
		{mustJSON(obj(helmRelease, "v2beta1", nil, spec1)), nil, "v2beta1", false},
		{mustJSON(obj(helmRelease, "v2beta1", stored, spec1)), mustJSON(obj(helmRelease, "v2beta1", stored, spec1)), "v2beta1", true},
		{mustJSON(obj(helmRelease, "v2beta1", nil, spec1)), mustJSON(obj(helmRelease, "v2beta1", stored, spec1)), "v2beta1", true},
		{mustJSON(obj(helmRelease, "v2beta1", stored, spec2)), mustJSON(obj(helmRelease, "v2beta1", stored, spec1)), "v2beta1", true},
		{mustJSON(obj(helmRelease, "v2beta2", map[string]string{RequestedAtAnnotation: "x"}, spec2)), mustJSON(obj(helmRelease, "v2beta2", stored, spec1)), "v2beta2", true},
		{[]byte(`{"metadata":{"annotations":null},"spec":{"n":1e400}}`), []byte(`{"metadata":{},"spec":{"n":1}}`), "v2beta1", true},
		{[]byte(`{"metadata":{"annotations":{"a/b~c":"\u2028"}},"spec":[1,2]}`), []byte(`{}`), "v2beta1", true},
		{[]byte(`{"apiVersion":"x","metadata":null}`), nil, "v2beta2", false},
		{[]byte(`{"metadata":{"deletionTimestamp":null},"spec":null}`), []byte(`{"spec":{}}`), "v2beta1", true},
		{[]byte(`not json`), nil, "v2", false},
		{[]byte(`{"spec":{"a":1,"a":2}}`), []byte(`{"spec":{"a":2}}`), "v2beta1", true},
	}
	for _, s := range seeds {
		f.Add(s.obj, s.old, s.version, s.update)
	}
	for i, s := range fastSeeds {
		f.Add(s, fastSeeds[(i+1)%len(fastSeeds)], "v2beta1", i%2 == 0)
	}
	realistic := mustJSON(realisticHelmRelease("v2beta1", "6.5.0", stored))
	f.Add(mustJSON(realisticHelmRelease("v2beta1", "6.6.0", stored)), realistic, "v2beta1", true)
	f.Add(mustJSON(realisticHelmRelease("v2beta1", "6.5.0", nil)), realistic, "v2beta1", true)
	r := newRule(f, "2.7")
	f.Fuzz(func(t *testing.T, raw, oldRaw []byte, version string, update bool) {
		res := gvr(helmRelease, version)
		build := func(o []byte) *admissiontest.Request {
			if update {
				return admissiontest.Update(res, "HelmRelease", oldRaw, o)
			}
			return admissiontest.Create(res, "HelmRelease", o)
		}
		req := build(raw).Build()
		if f := Classify(HelmGroup, "HelmRelease", version, r.Target().Release); f.Status == DeprecatedVersion {
			checkMark(t, r, req, f)
		}
		resp := handle(r, req)
		if !resp.Allowed || len(resp.Patches) == 0 {
			return
		}
		for _, p := range resp.Patches {
			if p.Path != "/metadata/annotations" && !strings.HasPrefix(p.Path, "/metadata/annotations/") {
				t.Fatalf("patch outside annotations: %+v", p)
			}
		}
		patched := applyPatch(t, resp.Patches, raw)
		if again := handle(r, build(patched).Build()); len(again.Patches) != 0 {
			t.Fatalf("not a fixed point: after %+v the rule asks for %+v", resp.Patches, again.Patches)
		}
	})
}

// checkMark holds mark to the decoding path: the same answer, patch,
// warning and error message included, whenever decodeFast reads the
// objects or encoding/json cannot; and a refusal naming the form where
// only encoding/json reads them.
func checkMark(t *testing.T, r *Rule, req admission.Request, f Finding) {
	t.Helper()
	got, want := outcome(r.mark(req, f)), outcome(r.markDecoded(req, f))
	_, fastNew := decodeFast(req.Object.Raw)
	_, fastOld := decodeFast(req.OldObject.Raw)
	if fastNew && (fastOld || req.Operation != admissionv1.Update) || want.Code == http.StatusBadRequest {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("mark differs from markDecoded (-decoded +mark):\n%s", diff)
		}
		return
	}
	if got.Code != http.StatusBadRequest || !strings.HasSuffix(got.Message, errNotServerForm.Error()) {
		t.Fatalf("mark of an object only encoding/json reads: %+v, want the refusal %q", got, errNotServerForm)
	}
}

// FuzzWithAnnotations proves the re-encoding keeps every field but
// annotations as it was.
func FuzzWithAnnotations(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","annotations":{"x":"y"}},"spec":{"big":12345678901234567890}}`), "steward.dev/migrated-from", "v")
	f.Add([]byte(`{"metadata":null}`), "k", "")
	f.Add([]byte(`{}`), "a~b/c", "\x00")
	f.Add([]byte(`[]`), "k", "v")
	f.Fuzz(func(t *testing.T, raw []byte, key, value string) {
		out, err := withAnnotations(raw, map[string]string{key: value})
		if err != nil {
			return
		}
		var before, after map[string]any
		if json.Unmarshal(raw, &before) != nil {
			t.Fatalf("withAnnotations accepted what json rejects: %q", raw)
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("withAnnotations produced invalid JSON %q: %v", out, err)
		}
		meta, _ := after["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		// encoding/json replaces invalid UTF-8 as it writes; compare with
		// what it makes of the value on its own.
		var want, wantKey string
		_ = json.Unmarshal(mustJSON(value), &want)
		_ = json.Unmarshal(mustJSON(key), &wantKey)
		if got, _ := ann[wantKey].(string); got != want {
			t.Fatalf("annotation %q = %q, want %q", key, got, want)
		}
		delete(after, "metadata")
		delete(before, "metadata")
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("fields outside metadata changed:\n%v\n%v", before, after)
		}
	})
}

// FuzzParseRelease proves parsing never panics and round-trips.
func FuzzParseRelease(f *testing.F) {
	for _, s := range []string{"2.8", "v2.10.1", "1.0", "", "2.x", "999.999.9999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRelease(s)
		if err != nil {
			return
		}
		again, err := ParseRelease(r.String())
		if err != nil || again != r {
			t.Fatalf("%q parsed to %v, which parses back to %v, %v", s, r, again, err)
		}
	})
}

// fastSeeds are objects in and out of the form the fast decoder reads:
// the API server's form, and each departure from it that must be left to
// encoding/json (wrong types, duplicate, differently-cased and escaped
// names, null annotations, deep nesting, invalid JSON).
var fastSeeds = [][]byte{
	mustJSON(obj(helmRelease, "v2beta1", marked(HelmGroup+"/v2beta1", earlier, "team", "web"), spec1)),
	mustJSON(realisticHelmRelease("v2beta1", "6.5.0", marked(HelmGroup+"/v2beta1", earlier))),
	[]byte(`{"metadata":{"name":"a","annotations":{"steward.dev\/migrated-from":"x","steward.dev/migrated-from":"y"}},"spec":{}}`),
	[]byte(`{"metadata":{"name":"a\u00e9\ud800","labels":{"helm.toolkit.fluxcd.io/name":"h\n"},"annotations":{}}}`),
	[]byte(`{"metadata":{"annotations":null}}`),
	[]byte(`{"metadata":{"annotations":{"a":null}}}`),
	[]byte(`{"metadata":{"annotations":{"a":1}}}`),
	[]byte(`{"metadata":{"Name":"a","name":"b"}}`),
	[]byte(`{"Metadata":{},"metadata":{}}`),
	[]byte(`{"metadata":{},"metadata":{"name":"b"}}`),
	[]byte(`{"metadata":{"name":"a"},"spec":1,"spec":2}`),
	[]byte(`{"metadata":{"deletionTimestamp":null,"name":null}}`),
	[]byte(`{"metadata":{"deletionTimestamp":"2026-05-04T09:00:00Z"}}`),
	[]byte(`{"metad\u0061ta":{}}`),
	[]byte(` {"metadata" : { "name" : "a" } , "spec" : [ 1 , -0.5e+3 , true , null ] } `),
	[]byte(`{"metadata":{}} x`),
	[]byte(`{"metadata":{},}`),
	[]byte(`{"metadata":{"a":[1,]}}`),
	[]byte(`{"metadata":{"a":01}}`),
	[]byte(`{"metadata":{"a":"\x01"}}`),
	[]byte(`{"metadata":{"a":"\q"}}`),
	[]byte(`{"metadata":{"a":"\xff"}}`),
	[]byte(`{"metadata":{"annotations":{"\xff":"\xfe"}}}`),
	[]byte("{\"metadata\":{\"name\u017f\":1}}"),
	[]byte(`{"metadata":{}, "spec":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + `}`),
	[]byte(`[]`),
	[]byte(``),
}

// FuzzDecodeFast proves the fast decoder agrees with encoding/json: what
// it accepts is valid JSON that decodeObject reads the same way, on every
// key the rule looks at.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, ok := decodeFast(raw)
		if !ok {
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("decodeFast accepted invalid JSON %q", raw)
		}
		slow, err := decodeObject(raw)
		if err != nil {
			t.Fatalf("decodeFast accepted %q, decodeObject fails: %v", raw, err)
		}
		keep := func(m map[string]string, keys []string) map[string]string {
			out := map[string]string{}
			for _, k := range keys {
				if v, ok := m[k]; ok {
					out[k] = v
				}
			}
			return out
		}
		type view struct {
			Name, GenerateName, Namespace string
			Terminating, HasAnnotations   bool
			Labels, Annotations           map[string]string
			Spec                          string
		}
		var top map[string]json.RawMessage
		_ = json.Unmarshal(raw, &top)
		var meta map[string]json.RawMessage
		_ = json.Unmarshal(top["metadata"], &meta)
		a, hasAnnotations := meta["annotations"]
		hasAnnotations = hasAnnotations && string(a) != "null"
		got := view{fast.Metadata.Name, fast.Metadata.GenerateName, fast.Metadata.Namespace, fast.terminating(), fast.hasAnnotations,
			keep(fast.Metadata.Labels, ownerLabels), keep(fast.Metadata.Annotations, annotationKeys), string(fast.Spec)}
		want := view{slow.Metadata.Name, slow.Metadata.GenerateName, slow.Metadata.Namespace, slow.terminating(), hasAnnotations,
			keep(slow.Metadata.Labels, ownerLabels), keep(slow.Metadata.Annotations, annotationKeys), string(slow.Spec)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("decodeFast(%q) differs from decodeObject (-want +got):\n%s", raw, diff)
		}
	})
}

// FuzzScanner proves the scanner the fast path reads with (a strict
// rawjson.Scanner at maxDepth) accepts exactly the JSON encoding/json
// accepts, up to that nesting limit.
func FuzzScanner(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add(s)
	}
	for _, s := range []string{`"\u12"`, `"\uD834\uDD1E"`, `-`, `-0`, `1.`, `1e`, `1E+2`, `.5`, `tru`, `nul`, `[1 2]`, `{"a" 1}`, `{"a":1 "b":2}`, "\t[\n]\r ", `{,}`, `[,]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s := rawjson.NewStrict(raw, maxDepth)
		got := s.Value() && s.End()
		if want := json.Valid(raw); got != want {
			if !got && (bytes.Count(raw, []byte("["))+bytes.Count(raw, []byte("{"))) > maxDepth {
				return // Deeper than the scanner goes: left to encoding/json.
			}
			t.Fatalf("scanner accepts %q: %v; encoding/json: %v", raw, got, want)
		}
	})
}

// FuzzCompareSpecs proves sameSpec, and the walk over two specs whenever
// it answers, answer as decoding both and comparing with
// reflect.DeepEqual does.
func FuzzCompareSpecs(f *testing.F) {
	for _, p := range [][2]string{
		{`{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1}`},
		{`{"a":1,"b":{"c":"x"}}`, `{"a":1,"b":{"c":"y"}}`},
		{`{"a":1}`, `{"a":1,"b":2}`},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`{"a":"\u0041"}`, `{"a":"A"}`},
		{`{"a":"\u003c"}`, `{"a":"<"}`},
		{`{"a":"\ud800"}`, `{"a":"\ufffd"}`},
		{"{\"a\":\"\xff\"}", `{"a":"\ufffd"}`},
		{`{"a":1.0}`, `{"a":1}`},
		{`{"a":[1,2,3]}`, `{"a":[1,2]}`},
		{`{"a":null}`, `{"a":false}`},
		{`{"a":true}`, `{"a":false}`},
		{``, `null`},
		{``, `{}`},
		{`[{"b":1,"a":2}]`, `[{"a":2,"b":1}]`},
		{`{"\u0061":1}`, `{"a":1}`},
		{`{"a!":1,"a":2}`, `{"a":2,"a!":1}`},
	} {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if (len(a) > 0 && !json.Valid(a)) || (len(b) > 0 && !json.Valid(b)) {
			return // Specs come from decoded objects: always valid.
		}
		va, errA := decodeAny(a)
		vb, errB := decodeAny(b)
		if errA != nil || errB != nil {
			t.Fatalf("decodeAny: %v, %v", errA, errB)
		}
		want := reflect.DeepEqual(va, vb)
		if got := sameSpec(&object{Spec: a}, &object{Spec: b}); got != want {
			t.Fatalf("sameSpec(%q, %q) = %v, want %v", a, b, got, want)
		}
		if v := compareSpecs(a, b); v != unsure && (v == same) != want {
			t.Fatalf("compareSpecs(%q, %q) = %v, want same = %v", a, b, v, want)
		}
	})
}
