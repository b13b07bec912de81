package apimigration

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/serving"
)

// TestHandleEveryKind runs every Flux kind in the table through each of its
// versions, for CREATE and UPDATE, at the default target (nothing removed)
// and at Flux 2.9 (every deprecated version removed): deprecated writes are
// annotated and warned about, removed ones refused, current ones untouched.
func TestHandleEveryKind(t *testing.T) {
	type want struct {
		status Status
		result result
	}
	cases := map[string]struct {
		reason string
		target string
		req    admission.Request
		want   want
	}{}
	for i := range apis {
		a := &apis[i]
		versions := a.Versions()
		for _, target := range []string{"2.6", "2.7", "2.9"} {
			for _, v := range versions {
				for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
					f := Classify(a.Group, a.Kind, v, MustParseRelease(target))
					var req admission.Request
					if op == admissionv1.Create {
						req = admissiontest.Create(gvr(a, v), a.Kind, obj(a, v, nil, spec1)).Build()
					} else {
						req = admissiontest.Update(gvr(a, v), a.Kind, obj(a, v, nil, spec1), obj(a, v, nil, spec1)).Build()
					}
					var w want
					w.status = f.Status
					switch f.Status {
					case Untouched:
						w.result = result{Allowed: true, Code: http.StatusOK}
					case DeprecatedVersion:
						w.result = result{Allowed: true, Code: http.StatusOK, Message: f.Warning(), Warnings: []string{f.Warning()},
							Patches: patchesOf(addAll(marked(a.Group+"/"+v, stamp)))}
					case RemovedVersion:
						w.result = result{Code: http.StatusForbidden, Message: f.Refusal(a.Kind+" apps/podinfo", "")}
					}
					name := fmt.Sprintf("%s %s/%s %s at Flux %s is %s", a.Kind, a.Group, v, op, target, f.Status)
					cases[name] = struct {
						reason string
						target string
						req    admission.Request
						want   want
					}{reason: "every kind, version and operation gets the table's decision", target: target, req: req, want: w}
				}
			}
		}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := handle(newRule(t, tc.target), tc.req)
			if diff := cmp.Diff(tc.want.result, got); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
	// The matrix must cover all three outcomes, or it proves less than it says.
	seen := map[Status]bool{}
	for _, tc := range cases {
		seen[tc.want.status] = true
	}
	if len(seen) != 3 {
		t.Errorf("the matrix covers only %v", seen)
	}
}

// patchesOf lists expected operations in the order outcome sorts them.
func patchesOf(ops ...jsonpatch.JsonPatchOperation) []jsonpatch.JsonPatchOperation {
	sort.Slice(ops, func(i, j int) bool { return ops[i].Path < ops[j].Path })
	return ops
}

// TestHandle covers the cases that decide whether a write re-triggers a
// reconcile, and the requests the rule must leave alone.
func TestHandle(t *testing.T) {
	const from = HelmGroup + "/v2beta1"
	v2beta1 := gvr(helmRelease, "v2beta1")
	v2 := gvr(helmRelease, "v2")
	f := Classify(HelmGroup, "HelmRelease", "v2beta1", MustParseRelease("2.6"))
	warn := f.Warning()
	warned := func(ops ...jsonpatch.JsonPatchOperation) result {
		r := result{Allowed: true, Code: http.StatusOK, Message: warn, Warnings: []string{warn}}
		if len(ops) > 0 {
			r.Patches = patchesOf(ops...)
		}
		return r
	}
	untouched := result{Allowed: true, Code: http.StatusOK}
	stored := marked(from, earlier)

	cases := map[string]struct {
		reason string
		target string
		req    admission.Request
		want   result
	}{
		"FirstWriteThroughDeprecatedVersionMarksExistingObject": {
			reason: "an object stored before Steward, first written through v2beta1, is marked and reconciled once",
			req:    admissiontest.Update(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", nil, spec1), obj(helmRelease, "v2beta1", nil, spec1)).Build(),
			want:   warned(addAll(marked(from, stamp))),
		},
		"CreateKeepsOtherAnnotations": {
			reason: "only Steward's keys and requestedAt are added; the client's annotations stay",
			req: admissiontest.Create(v2beta1, "HelmRelease",
				obj(helmRelease, "v2beta1", map[string]string{"team": "web"}, spec1)).Build(),
			want: warned(add(MigratedAtAnnotation, stamp), add(MigratedFromAnnotation, from), add(RequestedAtAnnotation, stamp)),
		},
		"CreateKeepsClientRequestedAt": {
			reason: "a requestedAt the client wrote is the client's; a new object is reconciled anyway",
			req: admissiontest.Create(v2beta1, "HelmRelease",
				obj(helmRelease, "v2beta1", map[string]string{RequestedAtAnnotation: "by-hand"}, spec1)).Build(),
			want: warned(add(MigratedAtAnnotation, stamp), add(MigratedFromAnnotation, from)),
		},
		"UnchangedReapplyKeepsRequestedAt": {
			reason: "a GitOps re-apply of the same manifest (annotations kept, as server-side apply does) must not start a reconcile",
			req:    admissiontest.Update(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", stored, spec1), obj(helmRelease, "v2beta1", stored, spec1)).Build(),
			want:   warned(),
		},
		"ReplaceDroppingAnnotationsGetsStoredOnesBack": {
			reason: "a replace that drops Steward's annotations gets the stored values back, not a new requestedAt",
			req: admissiontest.Update(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", stored, spec1),
				obj(helmRelease, "v2beta1", map[string]string{"team": "web"}, spec1)).Build(),
			want: warned(add(MigratedAtAnnotation, earlier), add(MigratedFromAnnotation, from), add(RequestedAtAnnotation, earlier)),
		},
		"ReplaceWithoutAnyAnnotationsGetsStoredOnesBack": {
			reason: "the same when the write has no annotations field at all",
			req:    admissiontest.Update(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", stored, spec1), obj(helmRelease, "v2beta1", nil, spec1)).Build(),
			want:   warned(addAll(stored)),
		},
		"LabelOnlyChangeDoesNotReconcile": {
			reason: "Flux does not reconcile on label or annotation changes, so neither does Steward ask it to",
			req: admissiontest.Update(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", stored, spec1),
				obj(helmRelease, "v2beta1", marked(from, earlier, "team", "web"), spec1)).Build(),
			want: warned(),
		},
		"SpecChangeRequestsReconcile": {
			reason: "a spec change through the deprecated version is marked again",
			req:    admissiontest.Update(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", stored, spec1), obj(helmRelease, "v2beta1", stored, spec2)).Build(),
			want:   warned(replace(MigratedAtAnnotation, stamp), replace(RequestedAtAnnotation, stamp)),
		},
		"SpecChangeKeepsClientRequestedAt": {
			reason: "a write that asks for a reconcile itself keeps its own requestedAt",
			req: admissiontest.Update(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", stored, spec1),
				obj(helmRelease, "v2beta1", marked(from, earlier, RequestedAtAnnotation, "by-hand"), spec2)).Build(),
			want: warned(replace(MigratedAtAnnotation, stamp)),
		},
		"UnchangedKeepsClientRequestedAt": {
			reason: "`flux reconcile`-style writes through the old version are not overridden",
			req: admissiontest.Update(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", stored, spec1),
				obj(helmRelease, "v2beta1", marked(from, earlier, RequestedAtAnnotation, "by-hand"), spec1)).Build(),
			want: warned(),
		},
		"ReinvocationAfterFreshMarkAsksForNothing": {
			reason: "reinvoked with its own fresh mark applied, the rule changes nothing (reinvocationPolicy IfNeeded)",
			req: admissiontest.Update(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", stored, spec1),
				obj(helmRelease, "v2beta1", marked(from, stamp), spec2)).Build(),
			want: warned(),
		},
		"StaleMarkInManifestIsRenewedOnSpecChange": {
			reason: "annotations copied into Git from an older export are not taken for a fresh mark",
			req: admissiontest.Update(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", stored, spec1),
				obj(helmRelease, "v2beta1", marked(from, earlier), spec2)).Build(),
			want: warned(replace(MigratedAtAnnotation, stamp), replace(RequestedAtAnnotation, stamp)),
		},
		"AnotherDeprecatedVersionMarksAgain": {
			reason: "an object marked for v2beta1 and now written through v2beta2 is a new migration",
			target: "2.7",
			req: admissiontest.Update(gvr(helmRelease, "v2beta2"), "HelmRelease", obj(helmRelease, "v2beta2", stored, spec1),
				obj(helmRelease, "v2beta2", stored, spec1)).Build(),
			want: func() result {
				w := Classify(HelmGroup, "HelmRelease", "v2beta2", MustParseRelease("2.7")).Warning()
				return result{Allowed: true, Code: http.StatusOK, Message: w, Warnings: []string{w}, Patches: patchesOf(
					replace(MigratedAtAnnotation, stamp), replace(MigratedFromAnnotation, HelmGroup+"/v2beta2"), replace(RequestedAtAnnotation, stamp))}
			}(),
		},
		"TerminatingObjectIsOnlyWarned": {
			reason: "a reconcile request on an object being deleted is pointless; the warning still tells the writer",
			req: admissiontest.Update(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", nil, spec1), func() map[string]any {
				o := obj(helmRelease, "v2beta1", nil, spec1)
				o["metadata"].(map[string]any)["deletionTimestamp"] = "2026-05-04T09:00:00Z"
				return o
			}()).Build(),
			want: warned(),
		},
		"DryRunGetsTheSameAnswer": {
			reason: "a dry run shows exactly what the write would do",
			req:    admissiontest.Create(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", nil, spec1)).DryRun().Build(),
			want:   warned(addAll(marked(from, stamp))),
		},
		"CurrentVersionUpdateIsUntouched": {
			reason: "writes through v2 (Flux's own controllers) get no patch and no warning",
			req:    admissiontest.Update(v2, "HelmRelease", obj(helmRelease, "v2", stored, spec1), obj(helmRelease, "v2", nil, spec2)).Build(),
			want:   untouched,
		},
		"ConvertedRequestIsJudgedByRequestKind": {
			reason: "when the API server converted the request (matchPolicy Equivalent), the client's version in requestKind decides",
			req: admissiontest.Create(v2, "HelmRelease", obj(helmRelease, "v2", nil, spec1)).
				RequestKind(schema.GroupVersionKind{Group: HelmGroup, Version: "v2beta1", Kind: "HelmRelease"}, "helmreleases").Build(),
			want: warned(addAll(marked(from, stamp))),
		},
		"ConvertedFromCurrentVersionIsUntouched": {
			reason: "kind names a deprecated version but the client wrote v2: untouched",
			req: admissiontest.Create(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", nil, spec1)).
				RequestKind(schema.GroupVersionKind{Group: HelmGroup, Version: "v2", Kind: "HelmRelease"}, "helmreleases").Build(),
			want: untouched,
		},
		"MissingRequestKindFallsBackToKind": {
			reason: "an API server that sends no requestKind has not converted the request",
			req: func() admission.Request {
				r := admissiontest.Create(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", nil, spec1)).Build()
				r.RequestKind, r.RequestResource = nil, nil
				return r
			}(),
			want: warned(addAll(marked(from, stamp))),
		},
		"StatusSubresourceIsUntouched": {
			reason: "status writes are the controller's and carry no apiVersion choice worth marking",
			req:    admissiontest.Update(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", nil, spec1), obj(helmRelease, "v2beta1", nil, spec1)).SubResource("status").Build(),
			want:   untouched,
		},
		"DeleteIsUntouched": {
			reason: "deleting through an old version writes nothing",
			req:    admissiontest.Delete(v2beta1, "HelmRelease", obj(helmRelease, "v2beta1", nil, spec1)).Build(),
			want:   untouched,
		},
		"OtherKindIsUntouched": {
			reason: "kinds outside the table (here Flux's Kustomize config kind) are not Flux objects",
			req: admissiontest.Create(schema.GroupVersionResource{Group: "kustomize.config.k8s.io", Version: "v1beta1", Resource: "kustomizations"},
				"Kustomization", map[string]any{"metadata": map[string]any{"name": "x"}}).Build(),
			want: untouched,
		},
		"RemovedVersionNamesTheApplyingKustomization": {
			reason: "the refusal says which Flux object applied the manifest, where it must change",
			target: "2.8",
			req: admissiontest.Create(gvr(helmRelease, "v2beta2"), "HelmRelease", func() map[string]any {
				o := obj(helmRelease, "v2beta2", nil, spec1)
				o["metadata"].(map[string]any)["labels"] = map[string]any{
					"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
				return o
			}()).Build(),
			want: result{Code: http.StatusForbidden, Message: "apimigration: HelmRelease apps/podinfo is written through helm.toolkit.fluxcd.io/v2beta2, " +
				"which Flux 2.8 removed (this cluster targets Flux 2.8); change apiVersion to helm.toolkit.fluxcd.io/v2 in the manifest " +
				"Kustomization flux-system/apps applies (`flux migrate -f <dir>` rewrites a checkout, `flux migrate` the stored objects)"},
		},
		"RemovedVersionIsRefusedEvenWhenObjectDoesNotDecode": {
			reason: "a refusal does not depend on decoding the object; it names the request's object",
			target: "2.8",
			req: func() admission.Request {
				r := admissiontest.Create(gvr(helmRelease, "v2beta2"), "HelmRelease", `{"metadata": 7}`).Build()
				r.Name, r.Namespace = "podinfo", "apps"
				return r
			}(),
			want: result{Code: http.StatusForbidden, Message: Classify(HelmGroup, "HelmRelease", "v2beta2", MustParseRelease("2.8")).Refusal("HelmRelease apps/podinfo", "")},
		},
		"GenerateNameIsShownInRefusal": {
			reason: "an object created with generateName has no name yet",
			target: "2.8",
			req: admissiontest.Create(gvr(helmRelease, "v2beta2"), "HelmRelease",
				map[string]any{"metadata": map[string]any{"generateName": "podinfo-", "namespace": "apps"}}).Build(),
			want: result{Code: http.StatusForbidden, Message: Classify(HelmGroup, "HelmRelease", "v2beta2", MustParseRelease("2.8")).Refusal("HelmRelease apps/podinfo-*", "")},
		},
		"MalformedObjectIsAnError": {
			reason: "bad input is an error for Wrap to turn into an allow with a warning, never a denial",
			req:    admissiontest.Create(v2beta1, "HelmRelease", `{"metadata": {"annotations": {"a": 1}}}`).Build(),
			want: result{Code: http.StatusBadRequest,
				Message: "decoding the object: metadata.annotations is a JSON number, where a string is expected"},
		},
		"ObjectWithoutMetadataIsAnError": {
			reason: "an object the API server would never send is not patched wholesale",
			req:    admissiontest.Create(v2beta1, "HelmRelease", `{"spec": {}}`).Build(),
			want:   result{Code: http.StatusBadRequest, Message: "decoding the object: the object has no metadata"},
		},
		"MalformedOldObjectIsAnError": {
			reason: "the stored object is decoded too",
			req:    admissiontest.Update(v2beta1, "HelmRelease", `[]`, obj(helmRelease, "v2beta1", nil, spec1)).Build(),
			want: result{Code: http.StatusBadRequest,
				Message: "decoding the stored object: object is an array, not a JSON object"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			target := tc.target
			if target == "" {
				target = DefaultFluxVersion
			}
			got := handle(newRule(t, target), tc.req)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestErrorsAllowWithWarning proves, through the shared wrapper the server
// uses, that the rule's own failures never block a Flux write: the request
// is allowed with a warning and counted as errored.
func TestErrorsAllowWithWarning(t *testing.T) {
	r := newRule(t, DefaultFluxVersion)
	wh := r.Spec().Webhooks[0]
	metrics := serving.NewMetrics()
	h := ruletest.Handler(r, wh, rule.Enforce, serving.Settings{}, metrics)
	req := admissiontest.Create(gvr(helmRelease, "v2beta1"), "HelmRelease", `{"metadata": "not an object"}`).Build()
	resp := h.Handle(context.Background(), req)
	if !resp.Allowed || len(resp.Patches) != 0 {
		t.Fatalf("allowed=%v patches=%v: a mutating rule's error must allow the write unchanged", resp.Allowed, resp.Patches)
	}
	if len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "apimigration could not check this request and allowed it: decoding the object") {
		t.Errorf("warnings = %q", resp.Warnings)
	}
	if got := ruletest.DecisionCount(metrics, Name, serving.Errored); got != 1 {
		t.Errorf("errored counter moved by %v, want 1", got)
	}
	if resp.AuditAnnotations["decision"] != string(serving.Errored) {
		t.Errorf("audit annotations = %v", resp.AuditAnnotations)
	}
}

// TestModes proves the shared modes apply: warn turns a refusal into a
// warning, audit leaves even deprecated writes unannotated.
func TestModes(t *testing.T) {
	removed := admissiontest.Create(gvr(helmRelease, "v2beta2"), "HelmRelease", obj(helmRelease, "v2beta2", nil, spec1)).Build()
	deprecated := admissiontest.Create(gvr(helmRelease, "v2beta2"), "HelmRelease", obj(helmRelease, "v2beta2", nil, spec1)).Build()
	refusal := Classify(HelmGroup, "HelmRelease", "v2beta2", MustParseRelease("2.8")).Refusal("HelmRelease apps/podinfo", "")
	cases := map[string]struct {
		reason  string
		mode    rule.Mode
		target  string
		req     admission.Request
		allowed bool
		patched bool
		warning string
	}{
		"EnforceRefusesRemoved": {reason: "enforce denies", mode: rule.Enforce, target: "2.8", req: removed, warning: ""},
		"WarnAllowsRemovedWithWarning": {reason: "warn allows with the refusal as warning", mode: rule.Warn, target: "2.8", req: removed,
			allowed: true, warning: refusal},
		"AuditAllowsRemovedSilently": {reason: "audit records only", mode: rule.Audit, target: "2.8", req: removed, allowed: true},
		"AuditLeavesDeprecatedUnannotated": {reason: "audit mode has no visible effect, not even the annotation", mode: rule.Audit,
			target: "2.6", req: deprecated, allowed: true},
		"EnforceAnnotatesDeprecated": {reason: "enforce annotates and warns", mode: rule.Enforce, target: "2.6", req: deprecated,
			allowed: true, patched: true, warning: Classify(HelmGroup, "HelmRelease", "v2beta2", MustParseRelease("2.6")).Warning()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRule(t, tc.target)
			h := ruletest.Handler(r, r.Spec().Webhooks[0], tc.mode, serving.Settings{}, nil)
			resp := h.Handle(context.Background(), tc.req)
			warning := ""
			if len(resp.Warnings) > 0 {
				warning = resp.Warnings[0]
			}
			got := []any{resp.Allowed, len(resp.Patches) > 0, warning}
			if diff := cmp.Diff([]any{tc.allowed, tc.patched, tc.warning}, got); diff != "" {
				t.Errorf("%s: [allowed patched warning]\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
