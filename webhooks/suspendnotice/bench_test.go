package suspendnotice

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
)

// BenchmarkHandle measures the handler on the requests it sees; AllowAll is
// the floor: a handler that allows without reading anything.
func BenchmarkHandle(b *testing.B) {
	r := newRule(suspendedWeb)
	reqs := map[string]admission.Request{
		"Suspend":                admissiontest.Update(ksGVR, "Kustomization", ks(false, nil), ks(true, nil)).User(jane).Build(),
		"Resume":                 admissiontest.Update(ksGVR, "Kustomization", ks(true, recorded(nil)), ks(false, recorded(nil))).Build(),
		"EventRewritten":         admissiontest.Create(coreEvGVR, "Event", coreEv("kustomize-controller", "", finished, webRef)).Build(),
		"EventNotSuspended":      admissiontest.Create(coreEvGVR, "Event", coreEv("kustomize-controller", "", finished, otherRef)).Build(),
		"EventOtherComponent":    admissiontest.Create(coreEvGVR, "Event", coreEv("kubelet", "", finished, webRef)).Build(),
		"EventsV1Rewritten":      admissiontest.Create(evV1GVR, "Event", eventsV1("kustomize-controller", finished, webRef)).Build(),
		"SuspendWithLargeValues": admissiontest.Update(ksGVR, "Kustomization", large(false), large(true)).User(jane).Build(),
	}
	ruletest.BenchmarkHandle(b, r, "EventRewritten", reqs)
}

// large is a Kustomization with a big spec, as HelmReleases with inline
// values have.
func large(suspend bool) map[string]any {
	o := ks(suspend, nil)
	patches := make([]any, 200)
	for i := range patches {
		patches[i] = map[string]any{"patch": "- op: replace\n  path: /spec/replicas\n  value: 3\n", "target": map[string]any{"kind": "Deployment", "name": "web"}}
	}
	o["spec"].(map[string]any)["patches"] = patches
	return o
}
