package suspendnotice

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/celtest"
)

func TestMatchConditionsCompile(t *testing.T) {
	cfg := Config{Controllers: []string{`we"ird\controller`}}
	cfg.Default()
	for _, wh := range New(cfg).Spec().Webhooks {
		if err := celtest.Compile(wh.MatchConditions); err != nil {
			t.Errorf("%s: %v", wh.Name, err)
		}
	}
}

// TestMatchConditions proves which requests never leave the API server, and
// that objects lacking any field never make a condition fail.
func TestMatchConditions(t *testing.T) {
	bare := map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": map[string]any{"name": "web", "namespace": "apps"}}
	bareEvent := map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": "e", "namespace": "apps"}}
	bareV1Event := map[string]any{"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": map[string]any{"name": "e", "namespace": "apps"}}
	cases := map[string]struct {
		reason   string
		webhook  int
		req      admission.Request
		wantSent bool
	}{
		"SuspendIsSent": {
			reason: "spec.suspend turns true",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(false, nil), ks(true, nil)).Build(), wantSent: true,
		},
		"ResumeIsSent": {
			reason: "spec.suspend turns false",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(true, recorded(nil)), ks(nil, recorded(nil))).Build(), wantSent: true,
		},
		"CreateSuspendedIsSent": {
			reason: "spec.suspend is true on create",
			req:    admissiontest.Create(ksGVR, "Kustomization", ks(true, nil)).Build(), wantSent: true,
		},
		"CreateWithCopiedRecordIsSent": {
			reason: "a record on a new object that is not suspended must be removed",
			req:    admissiontest.Create(ksGVR, "Kustomization", ks(false, recorded(nil))).Build(), wantSent: true,
		},
		"RecordEditIsSent": {
			reason: "the record is kept in step with spec.suspend",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(true, recorded(nil)), ks(true, nil)).Build(), wantSent: true,
		},
		"CreateNotSuspendedStaysInTheAPIServer": {
			reason: "most creates have nothing to record",
			req:    admissiontest.Create(ksGVR, "Kustomization", ks(nil, nil)).Build(),
		},
		"UnrelatedUpdateStaysInTheAPIServer": {
			reason: "Flux's own writes (finalizers, annotations) never reach Steward",
			req:    admissiontest.Update(ksGVR, "Kustomization", ks(true, recorded(nil)), ks(true, recorded(map[string]any{"reconcile.fluxcd.io/requestedAt": "now"}))).Build(),
		},
		"BareObjectsStayInTheAPIServerWithoutError": {
			reason: "no spec, no annotations",
			req:    admissiontest.Update(ksGVR, "Kustomization", bare, bare).Build(),
		},
		"BareCreateStaysInTheAPIServerWithoutError": {
			reason: "no spec, no annotations",
			req:    admissiontest.Create(ksGVR, "Kustomization", bare).Build(),
		},
		"FluxNextRunEventIsSent": {
			reason:  "the rule must look it up",
			webhook: 1,
			req:     admissiontest.Create(coreEvGVR, "Event", coreEv("kustomize-controller", "", finished, otherRef)).Build(), wantSent: true,
		},
		"FluxNextRunEventsV1IsSent": {
			reason:  "events.k8s.io/v1 fields are read in their own shape",
			webhook: 1,
			req:     admissiontest.Create(evV1GVR, "Event", eventsV1("source-controller", finished, otherRef)).Build(), wantSent: true,
		},
		"OtherComponentStaysInTheAPIServer": {
			reason:  "events of other controllers never reach Steward",
			webhook: 1,
			req:     admissiontest.Create(coreEvGVR, "Event", coreEv("kubelet", "", finished, webRef)).Build(),
		},
		"OtherComponentEventsV1StaysInTheAPIServer": {
			reason:  "events of other controllers never reach Steward",
			webhook: 1,
			req:     admissiontest.Create(evV1GVR, "Event", eventsV1("scheduler", finished, webRef)).Build(),
		},
		"FluxEventWithoutNextRunStaysInTheAPIServer": {
			reason:  "nothing to rewrite",
			webhook: 1,
			req:     admissiontest.Create(coreEvGVR, "Event", coreEv("kustomize-controller", "", "Health check passed", webRef)).Build(),
		},
		"BareEventStaysInTheAPIServerWithoutError": {
			reason:  "no source, message or reportingComponent",
			webhook: 1,
			req:     admissiontest.Create(coreEvGVR, "Event", bareEvent).Build(),
		},
		"BareEventsV1StaysInTheAPIServerWithoutError": {
			reason:  "no reportingController or note",
			webhook: 1,
			req:     admissiontest.Create(evV1GVR, "Event", bareV1Event).Build(),
		},
	}
	cfg := Config{}
	cfg.Default()
	specs := New(cfg).Spec().Webhooks
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := celtest.Sent(specs[tc.webhook].MatchConditions, tc.req)
			if err != nil {
				t.Fatalf("%s\nmatchConditions failed: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.wantSent, got); diff != "" {
				t.Errorf("%s\nsent: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
