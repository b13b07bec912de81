package installplanguard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/celtest"
)

func TestMatchConditionsCompile(t *testing.T) {
	cfg := Config{OLMUsers: []string{`odd"user\name`, "system:serviceaccount:olm:olm-operator-serviceaccount"}}
	cfg.Default()
	for _, wh := range New(cfg).Spec().Webhooks {
		if err := celtest.Compile(wh.MatchConditions); err != nil {
			t.Errorf("%s: %v", wh.Name, err)
		}
	}
}

// TestMatchConditions proves which requests never leave the API server, and
// that objects with missing fields never make a condition fail (which would
// apply the failure policy to the request).
func TestMatchConditions(t *testing.T) {
	installing := planOpts{phase: "Installing", approved: true, csvs: []any{"etcd.v1"}, owners: ownedBy("etcd")}
	unapproved := installing
	unapproved.approved = false
	relabelled := plan(installing)
	relabelled["metadata"].(map[string]any)["labels"] = map[string]any{"a": "b"}
	bare := map[string]any{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan", "metadata": map[string]any{"name": "x", "namespace": "operators"}}
	bareSub := map[string]any{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription", "metadata": map[string]any{"name": "etcd", "namespace": "operators"}}
	channelChange := sub("Manual", true)
	channelChange["spec"].(map[string]any)["channel"] = "alpha"

	cases := map[string]struct {
		reason   string
		webhook  int
		req      admission.Request
		wantSent bool
	}{
		"UserDeleteOfInstallingPlanIsSent": {
			reason: "the rule must see it to refuse it",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(installing)).Build(), wantSent: true,
		},
		"UserDeleteOfPlanningPlanIsSent": {
			reason: "Planning is in flight",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{phase: "Planning", owners: ownedBy("etcd")})).Build(), wantSent: true,
		},
		"OLMDeleteStaysInTheAPIServer": {
			reason: "OLM's own traffic never reaches Steward",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(installing)).User(olmUser).Build(),
		},
		"GarbageCollectorDeleteStaysInTheAPIServer": {
			reason: "the garbage collector is excluded like OLM",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(installing)).User(gcUser).Build(),
		},
		"CompletePlanDeleteStaysInTheAPIServer": {
			reason: "Complete plans are never protected",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{phase: "Complete", owners: ownedBy("etcd")})).Build(),
		},
		"UnownedPlanDeleteStaysInTheAPIServer": {
			reason: "only Subscription-owned plans are protected",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{phase: "Installing"})).Build(),
		},
		"BarePlanDeleteStaysInTheAPIServerWithoutError": {
			reason: "no spec, no status, no owners: every field is guarded",
			req:    admissiontest.Delete(planGVR, "InstallPlan", bare).Build(),
		},
		"UnapprovingInstallingPlanIsSent": {
			reason: "the rule must see it to refuse it",
			req:    admissiontest.Update(planGVR, "InstallPlan", plan(installing), plan(unapproved)).Build(), wantSent: true,
		},
		"RelabellingInstallingPlanStaysInTheAPIServer": {
			reason: "neither approval nor CSV names changed",
			req:    admissiontest.Update(planGVR, "InstallPlan", plan(installing), relabelled).Build(),
		},
		"UnapprovingRequiresApprovalPlanStaysInTheAPIServer": {
			reason: "updates are protected only while Installing",
			req: admissiontest.Update(planGVR, "InstallPlan",
				plan(planOpts{phase: "RequiresApproval", approved: true, owners: ownedBy("etcd")}),
				plan(planOpts{phase: "RequiresApproval", owners: ownedBy("etcd")})).Build(),
		},
		"BarePlanUpdateStaysInTheAPIServerWithoutError": {
			reason: "every field is guarded on both objects",
			req:    admissiontest.Update(planGVR, "InstallPlan", bare, bare).Build(),
		},
		"ApprovalChangeIsSent": {
			reason:  "the rule looks the plan's phase up",
			webhook: 1,
			req:     admissiontest.Update(subGVR, "Subscription", sub("Manual", true), sub("Automatic", true)).Build(), wantSent: true,
		},
		"ApprovalSetToItsDefaultStaysInTheAPIServer": {
			reason:  "unset and Automatic are the same strategy",
			webhook: 1,
			req:     admissiontest.Update(subGVR, "Subscription", sub("", true), sub("Automatic", true)).Build(),
		},
		"ChannelChangeStaysInTheAPIServer": {
			reason:  "only installPlanApproval changes are of interest",
			webhook: 1,
			req:     admissiontest.Update(subGVR, "Subscription", sub("Manual", true), channelChange).Build(),
		},
		"ApprovalChangeWithoutPlanStaysInTheAPIServer": {
			reason:  "no plan, nothing in flight",
			webhook: 1,
			req:     admissiontest.Update(subGVR, "Subscription", sub("Manual", false), sub("Automatic", false)).Build(),
		},
		"BareSubscriptionUpdateStaysInTheAPIServerWithoutError": {
			reason:  "every field is guarded",
			webhook: 1,
			req:     admissiontest.Update(subGVR, "Subscription", bareSub, bareSub).Build(),
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
