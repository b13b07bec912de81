package apimigration

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	jsonpatch "gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/internal/ruletest"
)

// clock is the fixed time every test rule marks objects with.
var clock = time.Date(2026, 5, 4, 10, 0, 0, 123000000, time.UTC)

// stamp is clock as the rule writes it.
const stamp = "2026-05-04T10:00:00.123Z"

// earlier is a mark made by an earlier write.
const earlier = "2026-04-01T08:00:00Z"

// newRule returns the rule for a target release, with the fixed clock.
func newRule(t testing.TB, fluxVersion string) *Rule {
	t.Helper()
	c := Config{FluxVersion: FluxRelease(fluxVersion)}
	// A release newer than the table cannot be pinned (Validate refuses
	// it), but a cluster can run one (ClusterTarget reads its CRDs' label):
	// the rule then decides against it as it does here.
	var newer *Target
	if r, err := ParseRelease(fluxVersion); err == nil && !NewestRelease().AtLeast(r) {
		newer, c.FluxVersion = &Target{Release: r, Source: SourceClusterLabel}, ""
	}
	c.Default()
	if errs := c.Validate(nil); len(errs) > 0 {
		t.Fatalf("config: %v", errs)
	}
	r := New(c)
	if newer != nil {
		r.pin = newer
	}
	r.now = func() time.Time { return clock }
	return r
}

// gvr is the resource of a Flux API at a version.
func gvr(a *API, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: a.Group, Version: version, Resource: a.Resource}
}

// helmRelease is the API most hand-written cases use.
var helmRelease = LookupKind(HelmGroup, "HelmRelease")

// obj builds a Flux object. annotations may be nil (no annotations field);
// spec is the object's spec.
func obj(a *API, version string, annotations map[string]string, spec map[string]any) map[string]any {
	meta := map[string]any{"name": "podinfo", "namespace": "apps", "uid": "7c2f", "resourceVersion": "42",
		"labels": map[string]any{"app.kubernetes.io/name": "podinfo"}}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	return map[string]any{
		"apiVersion": a.Group + "/" + version,
		"kind":       a.Kind,
		"metadata":   meta,
		"spec":       spec,
		"status":     map[string]any{"observedGeneration": 3},
	}
}

// spec1 and spec2 are two different specs.
var (
	spec1 = map[string]any{"interval": "10m", "chart": map[string]any{"spec": map[string]any{"chart": "podinfo", "version": "6.5.0"}}}
	spec2 = map[string]any{"interval": "10m", "chart": map[string]any{"spec": map[string]any{"chart": "podinfo", "version": "6.6.0"}}}
)

// marked returns the annotations of an object marked at the given time.
func marked(from, at string, extra ...string) map[string]string {
	m := map[string]string{MigratedFromAnnotation: from, MigratedAtAnnotation: at, RequestedAtAnnotation: at}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// result is what a test compares of a response.
type result struct {
	Allowed  bool
	Code     int32
	Message  string
	Warnings []string
	Patches  []jsonpatch.JsonPatchOperation
}

func outcome(resp admission.Response) result {
	r := result{Allowed: resp.Allowed, Warnings: resp.Warnings, Patches: resp.Patches}
	if resp.Result != nil {
		r.Code, r.Message = resp.Result.Code, resp.Result.Message
	}
	sort.Slice(r.Patches, func(i, j int) bool { return r.Patches[i].Path < r.Patches[j].Path })
	if len(r.Patches) == 0 {
		r.Patches = nil
	}
	return r
}

func handle(r *Rule, req admission.Request) result {
	return outcome(ruletest.Judge(context.Background(), r, req))
}

// add and replace build expected patch operations on annotations.
func add(key string, value any) jsonpatch.JsonPatchOperation {
	return jsonpatch.JsonPatchOperation{Operation: "add", Path: annotationPath(key), Value: value}
}

func replace(key, value string) jsonpatch.JsonPatchOperation {
	return jsonpatch.JsonPatchOperation{Operation: "replace", Path: annotationPath(key), Value: value}
}

func annotationPath(key string) string {
	if key == "" {
		return "/metadata/annotations"
	}
	b, _ := json.Marshal(key)
	esc := string(b[1 : len(b)-1])
	out := ""
	for _, c := range esc {
		switch c {
		case '~':
			out += "~0"
		case '/':
			out += "~1"
		default:
			out += string(c)
		}
	}
	return "/metadata/annotations/" + out
}

// addAll is the single operation that adds an annotations map to an
// object that had none.
func addAll(m map[string]string) jsonpatch.JsonPatchOperation {
	v := map[string]any{}
	for k, s := range m {
		v[k] = s
	}
	return add("", v)
}

// applyPatch applies the rule's patch operations to raw as the API server
// would, failing the test if they do not encode, decode or apply.
func applyPatch(t testing.TB, ops []jsonpatch.JsonPatchOperation, raw []byte) []byte {
	t.Helper()
	patch, err := json.Marshal(ops)
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
	return patched
}
