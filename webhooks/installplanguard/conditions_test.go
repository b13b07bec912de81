package installplanguard

import (
	"testing"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/celtest"
)

func TestMatchConditionsCompile(t *testing.T) {
	cfg := Config{OLMUsers: []string{`odd"user\name`, "system:serviceaccount:olm:olm-operator-serviceaccount"}}
	cfg.Default()
	celtest.CheckCompile(t, New(cfg).Spec().Webhooks)
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

	cases := map[string]celtest.Case{
		"UserDeleteOfInstallingPlanIsSent": {
			Reason:  "the rule must see it to refuse it",
			Request: admissiontest.Delete(planGVR, "InstallPlan", plan(installing)).Build(), Sent: true,
		},
		"UserDeleteOfPlanningPlanIsSent": {
			Reason:  "Planning is in flight",
			Request: admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{phase: "Planning", owners: ownedBy("etcd")})).Build(), Sent: true,
		},
		"OLMDeleteStaysInTheAPIServer": {
			Reason:  "OLM's own traffic never reaches Steward",
			Request: admissiontest.Delete(planGVR, "InstallPlan", plan(installing)).User(olmUser).Build(),
		},
		"GarbageCollectorDeleteStaysInTheAPIServer": {
			Reason:  "the garbage collector is excluded like OLM",
			Request: admissiontest.Delete(planGVR, "InstallPlan", plan(installing)).User(gcUser).Build(),
		},
		"CompletePlanDeleteStaysInTheAPIServer": {
			Reason:  "Complete plans are never protected",
			Request: admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{phase: "Complete", owners: ownedBy("etcd")})).Build(),
		},
		"UnownedPlanDeleteStaysInTheAPIServer": {
			Reason:  "only Subscription-owned plans are protected",
			Request: admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{phase: "Installing"})).Build(),
		},
		"BarePlanDeleteStaysInTheAPIServerWithoutError": {
			Reason:  "no spec, no status, no owners: every field is guarded",
			Request: admissiontest.Delete(planGVR, "InstallPlan", bare).Build(),
		},
		"UnapprovingInstallingPlanIsSent": {
			Reason:  "the rule must see it to refuse it",
			Request: admissiontest.Update(planGVR, "InstallPlan", plan(installing), plan(unapproved)).Build(), Sent: true,
		},
		"RelabellingInstallingPlanStaysInTheAPIServer": {
			Reason:  "neither approval nor CSV names changed",
			Request: admissiontest.Update(planGVR, "InstallPlan", plan(installing), relabelled).Build(),
		},
		"UnapprovingRequiresApprovalPlanStaysInTheAPIServer": {
			Reason: "updates are protected only while Installing",
			Request: admissiontest.Update(planGVR, "InstallPlan",
				plan(planOpts{phase: "RequiresApproval", approved: true, owners: ownedBy("etcd")}),
				plan(planOpts{phase: "RequiresApproval", owners: ownedBy("etcd")})).Build(),
		},
		"BarePlanUpdateStaysInTheAPIServerWithoutError": {
			Reason:  "every field is guarded on both objects",
			Request: admissiontest.Update(planGVR, "InstallPlan", bare, bare).Build(),
		},
		"ApprovalChangeIsSent": {
			Reason:  "the rule looks the plan's phase up",
			Webhook: 1,
			Request: admissiontest.Update(subGVR, "Subscription", sub("Manual", true), sub("Automatic", true)).Build(), Sent: true,
		},
		"ApprovalSetToItsDefaultStaysInTheAPIServer": {
			Reason:  "unset and Automatic are the same strategy",
			Webhook: 1,
			Request: admissiontest.Update(subGVR, "Subscription", sub("", true), sub("Automatic", true)).Build(),
		},
		"ChannelChangeStaysInTheAPIServer": {
			Reason:  "only installPlanApproval changes are of interest",
			Webhook: 1,
			Request: admissiontest.Update(subGVR, "Subscription", sub("Manual", true), channelChange).Build(),
		},
		"ApprovalChangeWithoutPlanStaysInTheAPIServer": {
			Reason:  "no plan, nothing in flight",
			Webhook: 1,
			Request: admissiontest.Update(subGVR, "Subscription", sub("Manual", false), sub("Automatic", false)).Build(),
		},
		"BareSubscriptionUpdateStaysInTheAPIServerWithoutError": {
			Reason:  "every field is guarded",
			Webhook: 1,
			Request: admissiontest.Update(subGVR, "Subscription", bareSub, bareSub).Build(),
		},
	}
	cfg := Config{}
	cfg.Default()
	celtest.CheckCases(t, New(cfg).Spec().Webhooks, cases)
}
