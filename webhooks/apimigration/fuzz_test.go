package apimigration

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
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

// checkMark holds mark to the decoding path: the same answer, patch and
// warning included, whenever the objects are in the API server's form;
// and otherwise a refusal as bad input, naming the form where
// encoding/json reads them.
func checkMark(t *testing.T, r *Rule, req admission.Request, f Finding) {
	t.Helper()
	rr := rule.NewRequest(req)
	got, want := outcome(r.mark(rr, f)), outcome(r.markDecoded(req, f))
	if rr.View().ServerForm() && (rr.OldView().ServerForm() || req.Operation != admissionv1.Update) {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("mark differs from markDecoded (-decoded +mark):\n%s", diff)
		}
		return
	}
	if got.Code != http.StatusBadRequest {
		t.Fatalf("mark of an object not in the API server's form: %+v, want a refusal as bad input", got)
	}
	if want.Code != http.StatusBadRequest && !strings.HasSuffix(got.Message, object.ErrNotServerForm.Error()) {
		t.Fatalf("mark of an object only encoding/json reads: %+v, want the refusal %q", got, object.ErrNotServerForm)
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

// fastSeeds are objects in and out of the form the rule reads (the API
// server's form, object.View.ServerForm), and each departure from it that
// it refuses (wrong types, duplicate, differently-cased and escaped
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
	[]byte(`{"metadata":{}, "spec":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`),
	[]byte(`[]`),
	[]byte(``),
}
