package apimigration

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"

	"github.com/stewardhq/steward/webhooks/admissiontest"
)

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzHandle feeds arbitrary objects through the decoder and the marking
// logic. Whatever the input, the rule must not panic; a patch may touch
// only metadata.annotations; and applying the patch and asking again must
// ask for nothing more (the reinvocation fixed point).
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
	r := newRule(f, "2.7")
	f.Fuzz(func(t *testing.T, raw, oldRaw []byte, version string, update bool) {
		res := gvr(helmRelease, version)
		build := func(o []byte) *admissiontest.Request {
			if update {
				return admissiontest.Update(res, "HelmRelease", oldRaw, o)
			}
			return admissiontest.Create(res, "HelmRelease", o)
		}
		resp := handle(r, build(raw).Build())
		if !resp.Allowed || len(resp.Patches) == 0 {
			return
		}
		for _, p := range resp.Patches {
			if p.Path != "/metadata/annotations" && !strings.HasPrefix(p.Path, "/metadata/annotations/") {
				t.Fatalf("patch outside annotations: %+v", p)
			}
		}
		patch, err := json.Marshal(resp.Patches)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := jsonpatchapply.DecodePatch(patch)
		if err != nil {
			t.Fatalf("decoding our own patch %s: %v", patch, err)
		}
		patched, err := decoded.Apply(raw)
		if err != nil {
			t.Fatalf("applying %s to %s: %v", patch, raw, err)
		}
		if again := handle(r, build(patched).Build()); len(again.Patches) != 0 {
			t.Fatalf("not a fixed point: after %s the rule asks for %+v", patch, again.Patches)
		}
	})
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
