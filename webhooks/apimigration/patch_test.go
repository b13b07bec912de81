package apimigration

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/rule"
)

// TestPatchAppliesToTheObject applies the patch the rule returns to the
// object the API server sent, as the API server does, and checks the
// annotations it ends up with, that nothing else changed, and that the
// written-out patch equals the one a diff of the metadata would give.
func TestPatchAppliesToTheObject(t *testing.T) {
	const from = HelmGroup + "/v2beta1"
	stored := marked(from, earlier)
	v2beta1 := gvr(helmRelease, "v2beta1")
	cases := map[string]struct {
		reason string
		req    admission.Request
		want   map[string]string
	}{
		"CreateWithoutAnnotationsAddsTheMap": {
			reason: "an object without metadata.annotations gets the whole map added",
			req:    admissiontest.Create(v2beta1, "HelmRelease", realisticHelmRelease("v2beta1", "6.5.0", nil)).Build(),
			want:   marked(from, stamp),
		},
		"CreateWithEmptyAnnotationsAddsKeys": {
			reason: "an empty map gets each key added",
			req:    admissiontest.Create(v2beta1, "HelmRelease", realisticHelmRelease("v2beta1", "6.5.0", map[string]string{})).Build(),
			want:   marked(from, stamp),
		},
		"CreateKeepsOtherAnnotations": {
			reason: "the client's annotations, including ones with slashes and tildes in their keys, stay",
			req: admissiontest.Create(v2beta1, "HelmRelease",
				realisticHelmRelease("v2beta1", "6.5.0", map[string]string{"a/b~c": "x", "team": "web"})).Build(),
			want: marked(from, stamp, "a/b~c", "x", "team", "web"),
		},
		"SpecChangeReplacesTheMark": {
			reason: "existing keys are replaced",
			req:    update("v2beta1", stored, marked(from, earlier, "team", "web"), "6.5.0", "6.6.0"),
			want:   marked(from, stamp, "team", "web"),
		},
		"ReplaceDroppingTheMarkGetsItBack": {
			reason: "a write without annotations gets the stored mark back",
			req:    update("v2beta1", stored, nil, "6.5.0", "6.5.0"),
			want:   stored,
		},
		"EscapedKeyIsReplacedNotDuplicated": {
			reason: "a key the client escaped is the same key; the patch replaces it",
			req: admissiontest.Create(v2beta1, "HelmRelease",
				`{"metadata":{"name":"podinfo","annotations":{"steward.dev\/migrated-from":"old"}},"spec":{}}`).Build(),
			want: marked(from, stamp),
		},
	}
	r := newRule(t, DefaultFluxVersion)
	f := Classify(HelmGroup, "HelmRelease", "v2beta1", r.Target().Release)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := rule.NewRequest(tc.req)
			if !req.View().ServerForm() {
				t.Fatalf("%s: the object is in the API server's form, yet its view says it is not", tc.reason)
			}
			resp := r.mark(req, f)
			if diff := cmp.Diff(outcome(r.markDecoded(tc.req, f)), outcome(resp)); diff != "" {
				t.Errorf("%s: written-out patch differs from the diffed one (-diffed +written):\n%s", tc.reason, diff)
			}
			if resp.PatchType == nil || *resp.PatchType != "JSONPatch" {
				t.Errorf("patch type = %v, want JSONPatch", resp.PatchType)
			}
			patched := applyPatch(t, resp.Patches, tc.req.Object.Raw)
			var before, after map[string]any
			if err := json.Unmarshal(tc.req.Object.Raw, &before); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(patched, &after); err != nil {
				t.Fatal(err)
			}
			meta := after["metadata"].(map[string]any)
			got := map[string]string{}
			for k, v := range meta["annotations"].(map[string]any) {
				got[k] = v.(string)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: annotations after %+v (-want +got):\n%s", tc.reason, resp.Patches, diff)
			}
			delete(meta, "annotations")
			delete(before["metadata"].(map[string]any), "annotations")
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("%s: the patch %+v changed more than annotations:\n%s", tc.reason, resp.Patches, diff)
			}
		})
	}
}
