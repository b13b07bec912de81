package installplanguard

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
)

// BenchmarkHandle measures the rule's handler on the requests it sees most;
// AllowAll is the floor: a handler that allows without reading anything.
func BenchmarkHandle(b *testing.B) {
	cfg := Config{}
	cfg.Default()
	r := New(cfg)
	r.plans = fakePhases{"operators/install-abcde": "Installing"}
	installing := planOpts{phase: "Installing", approved: true, csvs: []any{"etcdoperator.v0.9.4"}, owners: ownedBy("etcd")}
	unapproved := installing
	unapproved.approved = false
	reqs := map[string]admission.Request{
		"DeleteInstallingDenied":  admissiontest.Delete(planGVR, "InstallPlan", plan(installing)).Build(),
		"DeleteCompleteAllowed":   admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{phase: "Complete", owners: ownedBy("etcd")})).Build(),
		"UnapproveDenied":         admissiontest.Update(planGVR, "InstallPlan", plan(installing), plan(unapproved)).Build(),
		"SubscriptionWarned":      admissiontest.Update(subGVR, "Subscription", sub("Manual", true), sub("Automatic", true)).Build(),
		"DeleteByOLMAllowedEarly": admissiontest.Delete(planGVR, "InstallPlan", plan(installing)).User(olmUser).Build(),
	}
	ruletest.BenchmarkHandle(b, r, "DeleteInstallingDenied", reqs)
}
