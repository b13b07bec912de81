package suspendnotice

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/celtest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/object"
)

var (
	ksGVR     = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	gitGVR    = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	coreEvGVR = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	evV1GVR   = schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	fixedNow  = time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
)

const (
	jane       = "jane"
	suspendedW = "suspendnotice: Kustomization apps/web is suspended and will not reconcile until resumed: flux resume kustomization web -n apps"
	record     = "2026-03-01T12:30:00Z"
)

// ks builds a Kustomization; suspend nil leaves the field out.
func ks(suspend any, annotations map[string]any) map[string]any {
	meta := map[string]any{"name": "web", "namespace": "apps"}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	spec := map[string]any{"interval": "10m", "path": "./deploy", "prune": true}
	if suspend != nil {
		spec["suspend"] = suspend
	}
	return map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": meta, "spec": spec}
}

func recorded(extra map[string]any) map[string]any {
	a := map[string]any{AnnotationSuspendedBy: "alice", AnnotationSuspendedAt: "2026-01-01T00:00:00Z"}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

// result is the part of a response the tests compare.
type result struct {
	Allowed  bool
	Code     int32
	Patches  []jsonpatch.JsonPatchOperation
	Warnings []string
}

func resultOf(resp admission.Response) result {
	r := result{Allowed: resp.Allowed, Patches: resp.Patches, Warnings: resp.Warnings}
	if resp.Result != nil {
		r.Code = resp.Result.Code
	}
	return r
}

var untouched = result{Allowed: true, Code: http.StatusOK}

func patched(warning string, ops ...jsonpatch.JsonPatchOperation) result {
	r := result{Allowed: true, Code: http.StatusOK, Patches: ops}
	if warning != "" {
		r.Warnings = []string{warning}
	}
	return r
}

func add(key, value string) jsonpatch.JsonPatchOperation {
	return jsonpatch.NewOperation("add", "/metadata/annotations/"+object.EscapeToken(key), value)
}

func remove(key string) jsonpatch.JsonPatchOperation {
	return jsonpatch.NewOperation("remove", "/metadata/annotations/"+object.EscapeToken(key), nil)
}

func TestSuspension(t *testing.T) {
	cases := map[string]struct {
		reason string
		req    admission.Request
		want   result
	}{
		"SuspendingRecordsWhoAndWhenAndWarns": {
			reason: "the record and the warning are the point of the rule",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(false, nil), ks(true, nil)).User(jane).Build(),
			want: patched(suspendedW, jsonpatch.NewOperation("add", "/metadata/annotations",
				map[string]any{AnnotationSuspendedBy: jane, AnnotationSuspendedAt: record})),
		},
		"SuspendingKeepsOtherAnnotations": {
			reason: "only Steward's two keys are written",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(nil, map[string]any{"team": "web"}), ks(true, map[string]any{"team": "web"})).User(jane).Build(),
			want:   patched(suspendedW, add(AnnotationSuspendedBy, jane), add(AnnotationSuspendedAt, record)),
		},
		"CreatingSuspendedRecordsAndWarns": {
			reason: "an object created suspended is suspended by its creator",
			req:    admissiontest.Create(ksGVR, "Kustomization", ks(true, map[string]any{})).User(jane).Build(),
			want:   patched(suspendedW, add(AnnotationSuspendedBy, jane), add(AnnotationSuspendedAt, record)),
		},
		"CreatingSuspendedReplacesACopiedRecord": {
			reason: "a record copied from another object is not this suspension's",
			req:    admissiontest.Create(ksGVR, "Kustomization", ks(true, recorded(nil))).User(jane).Build(),
			want:   patched(suspendedW, add(AnnotationSuspendedBy, jane), add(AnnotationSuspendedAt, record)),
		},
		"CreatingNotSuspendedDropsACopiedRecord": {
			reason: "a record copied onto an object that is not suspended is false",
			req:    admissiontest.Create(ksGVR, "Kustomization", ks(false, recorded(map[string]any{"team": "web"}))).Build(),
			want:   patched("", remove(AnnotationSuspendedBy), remove(AnnotationSuspendedAt)),
		},
		"SuspendingAnotherKindNamesItsResumeCommand": {
			reason: "the warning gives the flux command for the kind",
			req: admissiontest.Update(gitGVR, "GitRepository",
				map[string]any{"metadata": map[string]any{"name": "podinfo", "namespace": "flux-system"}, "spec": map[string]any{}},
				map[string]any{"metadata": map[string]any{"name": "podinfo", "namespace": "flux-system"}, "spec": map[string]any{"suspend": true}}).User(jane).Build(),
			want: patched("suspendnotice: GitRepository flux-system/podinfo is suspended and will not reconcile until resumed: flux resume source git podinfo -n flux-system",
				jsonpatch.NewOperation("add", "/metadata/annotations", map[string]any{AnnotationSuspendedBy: jane, AnnotationSuspendedAt: record})),
		},
		"ResumingRemovesTheRecord": {
			reason: "a resumed object carries no stale record",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(true, recorded(nil)), ks(false, recorded(nil))).User(jane).Build(),
			want:   patched("", remove(AnnotationSuspendedBy), remove(AnnotationSuspendedAt)),
		},
		"ResumingByDroppingTheFieldRemovesTheRecord": {
			reason: "an absent spec.suspend is false",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(true, recorded(nil)), ks(nil, recorded(map[string]any{"team": "web"}))).Build(),
			want:   patched("", remove(AnnotationSuspendedBy), remove(AnnotationSuspendedAt)),
		},
		"ResumingWithoutRecordChangesNothing": {
			reason: "an object suspended before Steward has nothing to remove",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(true, nil), ks(false, nil)).Build(),
			want:   untouched,
		},
		"RepeatedSuspendIsIdempotent": {
			reason: "suspending a suspended object keeps the first record and warns no more",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(true, recorded(nil)), ks(true, recorded(nil))).User(jane).Build(),
			want:   untouched,
		},
		"UnrelatedChangeChangesNothing": {
			reason: "nothing changes when spec.suspend does not",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(false, nil), ks(false, map[string]any{"team": "web"})).Build(),
			want:   untouched,
		},
		"RecordStrippedWhileSuspendedIsRestored": {
			reason: "the record follows spec.suspend, not whoever last applied the object",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(true, recorded(nil)), ks(true, map[string]any{"team": "web"})).User(jane).Build(),
			want:   patched("", add(AnnotationSuspendedBy, "alice"), add(AnnotationSuspendedAt, "2026-01-01T00:00:00Z")),
		},
		"RecordRewrittenWhileSuspendedIsRestored": {
			reason: "the record cannot be forged while the object stays suspended",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(true, recorded(nil)), ks(true, recorded(map[string]any{AnnotationSuspendedBy: "mallory"}))).Build(),
			want:   patched("", add(AnnotationSuspendedBy, "alice")),
		},
		"RecordAddedToOldSuspensionIsKept": {
			reason: "objects suspended before Steward can be given a record by hand",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(true, nil), ks(true, recorded(nil))).Build(),
			want:   untouched,
		},
		"StringTrueDoesNotSuspend": {
			reason: "only a JSON true suspends, as in the match condition",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(false, nil), ks("true", nil)).Build(),
			want:   untouched,
		},
		"StatusSubresourceIsIgnored": {
			reason: "controllers write status; suspension lives in spec",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(false, nil), ks(true, nil)).SubResource("status").Build(),
			want:   untouched,
		},
		"UnknownKindIsIgnored": {
			reason: "only Flux kinds with spec.suspend are handled",
			req: admissiontest.Update(schema.GroupVersionResource{Group: "image.toolkit.fluxcd.io", Version: "v1", Resource: "imagepolicies"}, "ImagePolicy",
				ks(false, nil), ks(true, nil)).Build(),
			want: untouched,
		},
		"GarbageObjectIsAnError": {
			reason: "an undecodable object is reported (Wrap allows it, with a warning)",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(false, nil), []byte(`{"spec":"x"}`)).Build(),
			want:   result{Code: http.StatusBadRequest},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRule(nil)
			got := resultOf(ruletest.Judge(context.Background(), r, tc.req))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nHandle(): -want +got:\n%s", tc.reason, diff)
			}
			assertSentWhenActing(t, r, 0, tc.req, got)
		})
	}
}

func newRule(s Suspensions) *Rule {
	cfg := Config{}
	cfg.Default()
	r := New(cfg)
	// A local clock: the record is written in UTC whatever the zone.
	r.now = func() time.Time { return fixedNow.In(time.FixedZone("CEST", 2*3600)) }
	r.suspensions = s
	return r
}

type fakeSuspensions map[string]bool

func (f fakeSuspensions) Suspended(gr schema.GroupResource, ns, name string) bool {
	return f[gr.String()+" "+ns+"/"+name]
}

var suspendedWeb = fakeSuspensions{"kustomizations.kustomize.toolkit.fluxcd.io apps/web": true}

func coreEv(component, reporting, message string, about map[string]any) map[string]any {
	ev := map[string]any{
		"apiVersion":     "v1",
		"kind":           "Event",
		"metadata":       map[string]any{"name": "web.17f3a", "namespace": "apps"},
		"involvedObject": about,
		"reason":         "ReconciliationSucceeded",
		"message":        message,
		"type":           "Normal",
		"count":          1,
	}
	if component != "" {
		ev["source"] = map[string]any{"component": component}
	}
	if reporting != "" {
		ev["reportingComponent"] = reporting
	}
	return ev
}

func eventsV1(controller, note string, about map[string]any) map[string]any {
	return map[string]any{
		"apiVersion":          "events.k8s.io/v1",
		"kind":                "Event",
		"metadata":            map[string]any{"name": "web.17f3a", "namespace": "apps"},
		"regarding":           about,
		"reason":              "ReconciliationSucceeded",
		"note":                note,
		"type":                "Normal",
		"reportingController": controller,
		"reportingInstance":   controller + "-7d9f",
		"action":              "Reconcile",
		"eventTime":           "2026-03-01T12:30:00.000000Z",
	}
}

var (
	webRef   = map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "name": "web", "namespace": "apps"}
	otherRef = map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "name": "api", "namespace": "apps"}
)

const (
	finished  = "Reconciliation finished in 1.2s, next run in 10m0s"
	rewritten = "Reconciliation finished in 1.2s (suspended: no further runs until resumed)"
)

func TestEvents(t *testing.T) {
	noNamespaceRef := map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1beta2", "kind": "Kustomization", "name": "web"}
	cases := map[string]struct {
		reason string
		req    admission.Request
		cache  Suspensions
		want   result
	}{
		"CoreEventAboutSuspendedObjectIsRewritten": {
			reason: "the event must not promise a next run",
			req:    admissiontest.Create(coreEvGVR, "Event", coreEv("kustomize-controller", "", finished, webRef)).Build(),
			cache:  suspendedWeb,
			want:   patched("", jsonpatch.NewOperation("replace", "/message", rewritten)),
		},
		"EventsV1AboutSuspendedObjectIsRewritten": {
			reason: "events.k8s.io/v1 carries the message in note",
			req:    admissiontest.Create(evV1GVR, "Event", eventsV1("kustomize-controller", finished, webRef)).Build(),
			cache:  suspendedWeb,
			want:   patched("", jsonpatch.NewOperation("replace", "/note", rewritten)),
		},
		"EventSeriesUpdateIsRewritten": {
			reason: "client-go updates repeated events in place, message included",
			req: admissiontest.Update(coreEvGVR, "Event",
				coreEv("kustomize-controller", "", rewritten, webRef),
				coreEv("kustomize-controller", "", "Reconciliation finished in 900ms, next run in 10m0s", webRef)).Build(),
			cache: suspendedWeb,
			want:  patched("", jsonpatch.NewOperation("replace", "/message", "Reconciliation finished in 900ms (suspended: no further runs until resumed)")),
		},
		"ReportingComponentAloneIdentifiesTheController": {
			reason: "newer recorders fill reportingComponent",
			req:    admissiontest.Create(coreEvGVR, "Event", coreEv("", "helm-controller", finished, webRef)).Build(),
			cache:  suspendedWeb,
			want:   patched("", jsonpatch.NewOperation("replace", "/message", rewritten)),
		},
		"InvolvedObjectWithoutNamespaceUsesTheEventNamespace": {
			reason: "events live in their object's namespace; any API version of the kind counts",
			req:    admissiontest.Create(coreEvGVR, "Event", coreEv("kustomize-controller", "", finished, noNamespaceRef)).Build(),
			cache:  suspendedWeb,
			want:   patched("", jsonpatch.NewOperation("replace", "/message", rewritten)),
		},
		"EventAboutObjectNotSuspendedPassesUntouched": {
			reason: "only suspended objects' events are rewritten",
			req:    admissiontest.Create(coreEvGVR, "Event", coreEv("kustomize-controller", "", finished, otherRef)).Build(),
			cache:  suspendedWeb,
			want:   untouched,
		},
		"EventFromAnotherComponentPassesUntouched": {
			reason: "other controllers' events are not Flux's",
			req:    admissiontest.Create(coreEvGVR, "Event", coreEv("my-operator", "", finished, webRef)).Build(),
			cache:  suspendedWeb,
			want:   untouched,
		},
		"EventWithoutNextRunPassesUntouched": {
			reason: "there is nothing to correct",
			req:    admissiontest.Create(coreEvGVR, "Event", coreEv("kustomize-controller", "", "Health check passed in 2s", webRef)).Build(),
			cache:  suspendedWeb,
			want:   untouched,
		},
		"EventAboutNonFluxKindPassesUntouched": {
			reason: "the cache holds only Flux kinds",
			req: admissiontest.Create(coreEvGVR, "Event", coreEv("kustomize-controller", "", finished,
				map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "apps"})).Build(),
			cache: suspendedWeb,
			want:  untouched,
		},
		"EventWithoutCachePassesUntouched": {
			reason: "offline, nothing is known to be suspended",
			req:    admissiontest.Create(coreEvGVR, "Event", coreEv("kustomize-controller", "", finished, webRef)).Build(),
			want:   untouched,
		},
		"GarbageEventIsAnError": {
			reason: "an undecodable event is reported (Wrap allows it untouched)",
			req:    admissiontest.Create(coreEvGVR, "Event", []byte(`{"message":`)).Build(),
			cache:  suspendedWeb,
			want:   result{Code: http.StatusBadRequest},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRule(tc.cache)
			got := resultOf(ruletest.Judge(context.Background(), r, tc.req))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nHandle(): -want +got:\n%s", tc.reason, diff)
			}
			assertSentWhenActing(t, r, 1, tc.req, got)
		})
	}
}

func TestRewrite(t *testing.T) {
	long := string(make([]byte, 1000)) + ", next run in 1h0m0s"
	cases := map[string]struct {
		reason string
		in     string
		want   string
	}{
		"KustomizeControllerMessage": {reason: "the message of flux2 #5174", in: finished, want: rewritten},
		// One case for each message a Flux controller announces a next run
		// with, worded as in its source (see announcements).
		"NotificationControllerReceiver": {reason: "notification-controller, Receivers", in: "Reconciliation finished, next run in 10m0s", want: "Reconciliation finished (suspended: no further runs until resumed)"},
		"ImageReflectorSuccessfulScan":   {reason: "image-reflector-controller, new tags", in: "successful scan, next scan in 5m0s", want: "successful scan (suspended: no further scans until resumed)"},
		"ImageReflectorTagsUnchanged":    {reason: "image-reflector-controller, same tags", in: "tags did not change, next scan in 5m0s", want: "tags did not change (suspended: no further scans until resumed)"},
		"ImageReflectorConfigUnchanged": {
			reason: "image-reflector-controller, nothing to scan",
			in:     "no change in repository configuration since last scan, next scan in 1m0s",
			want:   "no change in repository configuration since last scan (suspended: no further scans until resumed)",
		},
		"NextTryIsNoAnnouncement": {reason: "a failed reconciliation's retry (kustomize-controller logs it) is not a schedule", in: "Reconciliation failed after 2s, next try in 30s", want: "Reconciliation failed after 2s, next try in 30s"},
		"CombinedSimilarEvents": {
			reason: "client-go's aggregator prefixes repeated messages",
			in:     "(combined from similar events): " + finished,
			want:   "(combined from similar events): " + rewritten,
		},
		"FractionalAndCompoundDurations": {reason: "any Go duration", in: "stored artifact, next run in 1h30m0.5s.", want: "stored artifact (suspended: no further runs until resumed)."},
		"MillisecondDuration":            {reason: "ms is not m then s", in: "done, next run in 500ms", want: "done (suspended: no further runs until resumed)"},
		"NonDurationWord":                {reason: "only what Flux writes, a Go duration, is replaced", in: "done, next run in soon", want: "done, next run in soon"},
		"NoNextRun":                      {reason: "nothing to change", in: "Health check passed", want: "Health check passed"},
		"AlreadyRewritten":               {reason: "rewriting is idempotent", in: rewritten, want: rewritten},
		"TooLongForTheAPIServer":         {reason: "a rewrite the API server would reject is not made", in: long, want: long},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, _ := rewrite(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nrewrite(): -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// assertSentWhenActing checks the matchConditions against the verdict: a
// request the rule patches or warns about must be one the API server sends.
func assertSentWhenActing(t *testing.T, r *Rule, webhook int, req admission.Request, got result) {
	t.Helper()
	if len(got.Patches) == 0 && len(got.Warnings) == 0 {
		return
	}
	data, _ := json.Marshal(got)
	celtest.RequireSent(t, r.Spec().Webhooks[webhook], req, string(data))
}
