package installplanguard

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/object"
)

// FuzzDecodeInstallPlan feeds arbitrary bytes to the InstallPlan decoder:
// it must return an error or a plan, never panic.
func FuzzDecodeInstallPlan(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","namespace":"b","ownerReferences":[{"apiVersion":"operators.coreos.com/v1alpha1","kind":"Subscription","name":"s"}]},"spec":{"approved":true,"clusterServiceVersionNames":["x"]},"status":{"phase":"Installing"}}`))
	f.Add([]byte(`{"metadata":{"ownerReferences":null},"spec":null,"status":{"phase":7}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := decodeInstallPlan(object.New(raw))
		if err == nil {
			_ = p.subscriptions()
		}
	})
}

// FuzzDecodeSubscription does the same for the Subscription decoder.
func FuzzDecodeSubscription(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"etcd","namespace":"operators"},"spec":{"installPlanApproval":"Manual"},"status":{"installPlanRef":{"name":"install-1","namespace":"operators"}}}`))
	f.Add([]byte(`{"status":{"installplan":{"name":"install-1"}}}`))
	f.Add([]byte(`{"status":{"installPlanRef":null}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := decodeSubscription(object.New(raw))
		if err == nil {
			_ = s.approval()
			_, _, _ = s.plan()
		}
	})
}

// FuzzHandle sends arbitrary old and new objects through the whole rule for
// each kind and operation it handles: it must answer, never panic.
func FuzzHandle(f *testing.F) {
	f.Add(uint8(0), []byte(`{"metadata":{"ownerReferences":[{"apiVersion":"operators.coreos.com/v1alpha1","kind":"Subscription","name":"s"}]},"status":{"phase":"Installing"}}`), []byte(`{}`))
	f.Add(uint8(1), []byte(`{"metadata":{"ownerReferences":[{"apiVersion":"operators.coreos.com/v1alpha1","kind":"Subscription","name":"s"}]},"spec":{"approved":true},"status":{"phase":"Installing"}}`), []byte(`{"spec":{"approved":false}}`))
	f.Add(uint8(2), []byte(`{"spec":{"installPlanApproval":"Manual"},"status":{"installPlanRef":{"name":"p"}}}`), []byte(`{"spec":{}}`))
	cfg := Config{}
	cfg.Default()
	r := New(cfg)
	r.plans = fakePhases{"/p": "Installing"}
	f.Fuzz(func(t *testing.T, which uint8, oldRaw, newRaw []byte) {
		var b *admissiontest.Request
		switch which % 3 {
		case 0:
			b = admissiontest.Delete(planGVR, "InstallPlan", oldRaw)
		case 1:
			b = admissiontest.Update(planGVR, "InstallPlan", oldRaw, newRaw)
		default:
			b = admissiontest.Update(schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "subscriptions"}, "Subscription", oldRaw, newRaw)
		}
		resp := ruletest.Judge(context.Background(), r, b.Build())
		if resp.Result == nil {
			t.Fatalf("no result for %v", admissionv1.Operation(b.Build().Operation))
		}
	})
}
