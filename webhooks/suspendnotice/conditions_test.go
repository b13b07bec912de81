package suspendnotice

import (
	"testing"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/celtest"
)

func TestMatchConditionsCompile(t *testing.T) {
	cfg := Config{Controllers: []string{`we"ird\controller`}}
	cfg.Default()
	celtest.CheckCompile(t, New(cfg).Spec().Webhooks)
}

// TestMatchConditions proves which requests never leave the API server, and
// that objects lacking any field never make a condition fail.
func TestMatchConditions(t *testing.T) {
	bare := map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": map[string]any{"name": "web", "namespace": "apps"}}
	bareEvent := map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": "e", "namespace": "apps"}}
	bareV1Event := map[string]any{"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": map[string]any{"name": "e", "namespace": "apps"}}
	cases := map[string]celtest.Case{
		"SuspendIsSent": {
			Reason:  "spec.suspend turns true",
			Request: admissiontest.Update(ksGVR, "Kustomization", ks(false, nil), ks(true, nil)).Build(), Sent: true,
		},
		"ResumeIsSent": {
			Reason:  "spec.suspend turns false",
			Request: admissiontest.Update(ksGVR, "Kustomization", ks(true, recorded(nil)), ks(nil, recorded(nil))).Build(), Sent: true,
		},
		"CreateSuspendedIsSent": {
			Reason:  "spec.suspend is true on create",
			Request: admissiontest.Create(ksGVR, "Kustomization", ks(true, nil)).Build(), Sent: true,
		},
		"CreateWithCopiedRecordIsSent": {
			Reason:  "a record on a new object that is not suspended must be removed",
			Request: admissiontest.Create(ksGVR, "Kustomization", ks(false, recorded(nil))).Build(), Sent: true,
		},
		"RecordEditIsSent": {
			Reason:  "the record is kept in step with spec.suspend",
			Request: admissiontest.Update(ksGVR, "Kustomization", ks(true, recorded(nil)), ks(true, nil)).Build(), Sent: true,
		},
		"CreateNotSuspendedStaysInTheAPIServer": {
			Reason:  "most creates have nothing to record",
			Request: admissiontest.Create(ksGVR, "Kustomization", ks(nil, nil)).Build(),
		},
		"UnrelatedUpdateStaysInTheAPIServer": {
			Reason:  "Flux's own writes (finalizers, annotations) never reach Steward",
			Request: admissiontest.Update(ksGVR, "Kustomization", ks(true, recorded(nil)), ks(true, recorded(map[string]any{"reconcile.fluxcd.io/requestedAt": "now"}))).Build(),
		},
		"BareObjectsStayInTheAPIServerWithoutError": {
			Reason:  "no spec, no annotations",
			Request: admissiontest.Update(ksGVR, "Kustomization", bare, bare).Build(),
		},
		"BareCreateStaysInTheAPIServerWithoutError": {
			Reason:  "no spec, no annotations",
			Request: admissiontest.Create(ksGVR, "Kustomization", bare).Build(),
		},
		"FluxNextRunEventIsSent": {
			Reason:  "the rule must look it up",
			Webhook: 1,
			Request: admissiontest.Create(coreEvGVR, "Event", coreEv("kustomize-controller", "", finished, otherRef)).Build(), Sent: true,
		},
		"FluxNextRunEventsV1IsSent": {
			Reason:  "events.k8s.io/v1 fields are read in their own shape",
			Webhook: 1,
			Request: admissiontest.Create(evV1GVR, "Event", eventsV1("source-controller", finished, otherRef)).Build(), Sent: true,
		},
		"ImageReflectorNextScanEventIsSent": {
			Reason:  "image-reflector-controller announces its next scan, not run",
			Webhook: 1,
			Request: admissiontest.Create(coreEvGVR, "Event", coreEv("image-reflector-controller", "", "successful scan, next scan in 5m0s", otherRef)).Build(), Sent: true,
		},
		"ImageReflectorNextScanEventsV1IsSent": {
			Reason:  "the same in events.k8s.io/v1's note",
			Webhook: 1,
			Request: admissiontest.Create(evV1GVR, "Event", eventsV1("image-reflector-controller", "tags did not change, next scan in 5m0s", otherRef)).Build(), Sent: true,
		},
		"OtherComponentStaysInTheAPIServer": {
			Reason:  "events of other controllers never reach Steward",
			Webhook: 1,
			Request: admissiontest.Create(coreEvGVR, "Event", coreEv("kubelet", "", finished, webRef)).Build(),
		},
		"OtherComponentEventsV1StaysInTheAPIServer": {
			Reason:  "events of other controllers never reach Steward",
			Webhook: 1,
			Request: admissiontest.Create(evV1GVR, "Event", eventsV1("scheduler", finished, webRef)).Build(),
		},
		"FluxEventWithoutNextRunStaysInTheAPIServer": {
			Reason:  "nothing to rewrite",
			Webhook: 1,
			Request: admissiontest.Create(coreEvGVR, "Event", coreEv("kustomize-controller", "", "Health check passed", webRef)).Build(),
		},
		"BareEventStaysInTheAPIServerWithoutError": {
			Reason:  "no source, message or reportingComponent",
			Webhook: 1,
			Request: admissiontest.Create(coreEvGVR, "Event", bareEvent).Build(),
		},
		"BareEventsV1StaysInTheAPIServerWithoutError": {
			Reason:  "no reportingController or note",
			Webhook: 1,
			Request: admissiontest.Create(evV1GVR, "Event", bareV1Event).Build(),
		},
	}
	cfg := Config{}
	cfg.Default()
	celtest.CheckCases(t, New(cfg).Spec().Webhooks, cases)
}
