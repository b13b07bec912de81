package installplanguard

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/celtest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
)

var (
	planGVR = schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "installplans"}
	subGVR  = schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "subscriptions"}
)

const (
	olmUser = "system:serviceaccount:olm:olm-operator-serviceaccount"
	gcUser  = "system:serviceaccount:kube-system:generic-garbage-collector"
	nsUser  = "system:serviceaccount:kube-system:namespace-controller"
)

type planOpts struct {
	phase    string
	approved bool
	csvs     []any
	owners   []any
}

func ownedBy(names ...string) []any {
	var refs []any
	for _, n := range names {
		refs = append(refs, map[string]any{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription", "name": n, "uid": "u-" + n})
	}
	return refs
}

func plan(o planOpts) map[string]any {
	meta := map[string]any{"name": "install-abcde", "namespace": "operators"}
	if o.owners != nil {
		meta["ownerReferences"] = o.owners
	}
	obj := map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1",
		"kind":       "InstallPlan",
		"metadata":   meta,
		"spec": map[string]any{
			"approval":                   "Manual",
			"approved":                   o.approved,
			"clusterServiceVersionNames": o.csvs,
		},
	}
	if o.csvs == nil {
		delete(obj["spec"].(map[string]any), "clusterServiceVersionNames")
	}
	if o.phase != "" {
		obj["status"] = map[string]any{"phase": o.phase, "plan": []any{map[string]any{"resource": map[string]any{"manifest": "{...}"}}}}
	}
	return obj
}

func sub(approval string, planRef bool) map[string]any {
	spec := map[string]any{"channel": "stable", "name": "etcd", "source": "operatorhubio-catalog"}
	if approval != "" {
		spec["installPlanApproval"] = approval
	}
	obj := map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1",
		"kind":       "Subscription",
		"metadata":   map[string]any{"name": "etcd", "namespace": "operators"},
		"spec":       spec,
	}
	if planRef {
		obj["status"] = map[string]any{"installPlanRef": map[string]any{"name": "install-abcde", "namespace": "operators", "kind": "InstallPlan"}}
	}
	return obj
}

// verdict is the part of a response the tests compare.
type verdict struct {
	Allowed  bool
	Code     int32
	Message  string
	Warnings []string
}

func verdictOf(resp admission.Response) verdict {
	v := verdict{Allowed: resp.Allowed, Warnings: resp.Warnings}
	if resp.Result != nil {
		v.Code, v.Message = resp.Result.Code, resp.Result.Message
	}
	return v
}

var allowed = verdict{Allowed: true, Code: http.StatusOK}

func denied(msg string) verdict { return verdict{Code: http.StatusForbidden, Message: msg} }

type fakePhases map[string]string

func (f fakePhases) Phase(ns, name string) (string, bool) {
	p, ok := f[ns+"/"+name]
	return p, ok
}

const deleteInstalling = "installplanguard: InstallPlan operators/install-abcde is Installing and owned by Subscription operators/etcd; deleting it while OLM is still working on it leaves the Subscription InstallPlanMissing or stuck. Refused: delete. Instead, wait until it is Complete or Failed, or delete Subscription operators/etcd to cancel the install (the garbage collector then removes the plan)."

// withStatus sets one status field of obj.
func withStatus(obj map[string]any, key string, v any) map[string]any {
	obj["status"].(map[string]any)[key] = v
	return obj
}

func TestHandle(t *testing.T) {
	installing := planOpts{phase: "Installing", approved: true, csvs: []any{"etcdoperator.v0.9.4"}, owners: ownedBy("etcd")}
	unapproved := installing
	unapproved.approved = false
	otherCSV := installing
	otherCSV.csvs = []any{"etcdoperator.v0.9.2"}
	reordered := planOpts{phase: "Installing", approved: true, csvs: []any{"a.v1", "b.v1"}, owners: ownedBy("etcd")}
	reordered2 := reordered
	reordered2.csvs = []any{"b.v1", "a.v1"}
	relabelled := plan(installing)
	relabelled["metadata"].(map[string]any)["labels"] = map[string]any{"team": "db"}
	requiresApproval := planOpts{phase: "RequiresApproval", csvs: []any{"etcdoperator.v0.9.4"}, owners: ownedBy("etcd")}
	approvedNow := requiresApproval
	approvedNow.approved = true

	cases := map[string]struct {
		reason string
		req    admission.Request
		plans  fakePhases
		want   verdict
	}{
		"DeleteInstallingPlanByUserIsDenied": {
			reason: "deleting a plan OLM is installing leaves its Subscription InstallPlanMissing",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(installing)).Build(),
			want:   denied(deleteInstalling),
		},
		"DeleteRequiresApprovalPlanSaysHowToApprove": {
			reason: "a plan waiting for approval is in flight; the message shows the approve command",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(requiresApproval)).Build(),
			want:   denied(`installplanguard: InstallPlan operators/install-abcde is RequiresApproval and owned by Subscription operators/etcd; deleting it while OLM is still working on it leaves the Subscription InstallPlanMissing or stuck. Refused: delete. Instead, approve it (kubectl -n operators patch installplan install-abcde --type merge -p '{"spec":{"approved":true}}'), or delete Subscription operators/etcd to cancel the install (the garbage collector then removes the plan).`),
		},
		"DeletePlanningPlanIsDenied": {
			reason: "a plan OLM is still resolving is in flight",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{phase: "Planning", owners: ownedBy("etcd")})).Build(),
			want:   denied("installplanguard: InstallPlan operators/install-abcde is Planning and owned by Subscription operators/etcd; deleting it while OLM is still working on it leaves the Subscription InstallPlanMissing or stuck. Refused: delete. Instead, wait until OLM has finished planning it, or delete Subscription operators/etcd to cancel the install (the garbage collector then removes the plan)."),
		},
		"DeletePlanOwnedBySeveralSubscriptionsNamesThemAll": {
			reason: "OLM resolves a namespace's Subscriptions together; each one is an owner",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{phase: "Installing", owners: ownedBy("etcd", "prometheus")})).Build(),
			want:   denied("installplanguard: InstallPlan operators/install-abcde is Installing and owned by Subscriptions operators/etcd, operators/prometheus; deleting it while OLM is still working on it leaves the Subscription InstallPlanMissing or stuck. Refused: delete. Instead, wait until it is Complete or Failed, or delete Subscriptions operators/etcd, operators/prometheus to cancel the install (the garbage collector then removes the plan)."),
		},
		"DeleteDryRunGetsTheSameAnswer": {
			reason: "a dry run must predict the real request",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(installing)).DryRun().Build(),
			want:   denied(deleteInstalling),
		},
		"DeleteByOLMIsAllowed": {
			reason: "OLM garbage-collects and replaces its own plans",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(installing)).User(olmUser, "system:serviceaccounts").Build(),
			want:   allowed,
		},
		"DeleteByGarbageCollectorIsAllowed": {
			reason: "the garbage collector deletes a plan only when every owning Subscription is gone",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(installing)).User(gcUser).Build(),
			want:   allowed,
		},
		"DeleteByNamespaceControllerIsAllowed": {
			reason: "refusing the namespace controller would keep a deleted namespace Terminating forever",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(installing)).User(nsUser).Build(),
			want:   allowed,
		},
		"DeleteCompletePlanIsAllowed": {
			reason: "Complete plans are history",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{phase: "Complete", approved: true, owners: ownedBy("etcd")})).Build(),
			want:   allowed,
		},
		"DeleteFailedPlanIsAllowed": {
			reason: "Failed plans are history",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{phase: "Failed", owners: ownedBy("etcd")})).Build(),
			want:   allowed,
		},
		"DeletePlanWithoutPhaseIsAllowed": {
			reason: "a plan OLM has not given a phase yet is not in one of the in-flight phases",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{owners: ownedBy("etcd")})).Build(),
			want:   allowed,
		},
		"DeleteUnownedPlanIsAllowed": {
			reason: "no Subscription depends on a plan it does not own",
			req:    admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{phase: "Installing"})).Build(),
			want:   allowed,
		},
		"DeletePlanOwnedByOtherKindIsAllowed": {
			reason: "only Subscription owners count",
			req: admissiontest.Delete(planGVR, "InstallPlan", plan(planOpts{phase: "Installing", owners: []any{
				map[string]any{"apiVersion": "example.com/v1", "kind": "Subscription", "name": "x"},
			}})).Build(),
			want: allowed,
		},
		"UnapproveInstallingPlanIsDenied": {
			reason: "withdrawing approval mid-install leaves the Subscription stuck",
			req:    admissiontest.Update(planGVR, "InstallPlan", plan(installing), plan(unapproved)).Build(),
			want:   denied("installplanguard: InstallPlan operators/install-abcde is Installing and owned by Subscription operators/etcd; changing what it installs or withdrawing its approval mid-install leaves the Subscription stuck. Refused: spec.approved from true to false. Instead, let the install finish (Complete or Failed); to hold back future upgrades set spec.installPlanApproval: Manual on the Subscription, or delete Subscription operators/etcd to cancel the install."),
		},
		"ChangingCSVNamesOfInstallingPlanIsDenied": {
			reason: "OLM is applying the named CSVs; rewriting the list makes it miss what it installed",
			req:    admissiontest.Update(planGVR, "InstallPlan", plan(installing), plan(otherCSV)).Build(),
			want:   denied("installplanguard: InstallPlan operators/install-abcde is Installing and owned by Subscription operators/etcd; changing what it installs or withdrawing its approval mid-install leaves the Subscription stuck. Refused: spec.clusterServiceVersionNames from [etcdoperator.v0.9.4] to [etcdoperator.v0.9.2]. Instead, let the install finish (Complete or Failed); to hold back future upgrades set spec.installPlanApproval: Manual on the Subscription, or delete Subscription operators/etcd to cancel the install."),
		},
		"ReorderingCSVNamesIsAllowed": {
			reason: "the same set of CSVs in another order is no change",
			req:    admissiontest.Update(planGVR, "InstallPlan", plan(reordered), plan(reordered2)).Build(),
			want:   allowed,
		},
		"ApprovingIsAlwaysAllowed": {
			reason: "approving is what a waiting plan needs",
			req:    admissiontest.Update(planGVR, "InstallPlan", plan(requiresApproval), plan(approvedNow)).Build(),
			want:   allowed,
		},
		"LabellingInstallingPlanIsAllowed": {
			reason: "only approval and the CSV list are protected",
			req:    admissiontest.Update(planGVR, "InstallPlan", plan(installing), relabelled).Build(),
			want:   allowed,
		},
		"UnapproveCompletePlanIsAllowed": {
			reason: "Complete plans are never protected",
			req: admissiontest.Update(planGVR, "InstallPlan",
				plan(planOpts{phase: "Complete", approved: true, owners: ownedBy("etcd")}),
				plan(planOpts{phase: "Complete", owners: ownedBy("etcd")})).Build(),
			want: allowed,
		},
		"UnapproveByOLMIsAllowed": {
			reason: "OLM owns its plans",
			req:    admissiontest.Update(planGVR, "InstallPlan", plan(installing), plan(unapproved)).User(olmUser).Build(),
			want:   allowed,
		},
		"StatusWriteKeepingThePhaseIsAllowed": {
			reason: "a status write that leaves the phase alone does not change what makes the plan in flight",
			req:    admissiontest.Update(planGVR, "InstallPlan", plan(installing), withStatus(plan(installing), "message", "retrying")).SubResource("status").Build(),
			want:   allowed,
		},
		"PhaseRewriteThroughStatusIsDenied": {
			reason: "only OLM moves a plan through its phases; a user who marks it Complete could then delete it",
			req:    admissiontest.Update(planGVR, "InstallPlan", plan(installing), withStatus(plan(installing), "phase", "Complete")).SubResource("status").Build(),
			want: denied("installplanguard: InstallPlan operators/install-abcde is Installing and owned by Subscription operators/etcd; only OLM moves a plan through its phases, and a plan cut loose from its Subscription leaves the Subscription InstallPlanMissing or stuck. " +
				"Refused: status.phase from Installing to Complete. Instead, wait until it is Complete or Failed, or delete Subscription operators/etcd to cancel the install (the garbage collector then removes the plan)."),
		},
		"DroppingTheOwnerOfAPlanAwaitingApprovalIsDenied": {
			reason: "a plan without its Subscription is no longer protected, so removing the owner is the first step of a delete",
			req:    admissiontest.Update(planGVR, "InstallPlan", plan(requiresApproval), plan(planOpts{phase: "RequiresApproval", csvs: []any{"etcdoperator.v0.9.4"}})).Build(),
			want: denied("installplanguard: InstallPlan operators/install-abcde is RequiresApproval and owned by Subscription operators/etcd; only OLM moves a plan through its phases, and a plan cut loose from its Subscription leaves the Subscription InstallPlanMissing or stuck. " +
				"Refused: removing the owner reference to Subscription operators/etcd. Instead, approve it (kubectl -n operators patch installplan install-abcde --type merge -p '{\"spec\":{\"approved\":true}}'), or delete Subscription operators/etcd to cancel the install (the garbage collector then removes the plan)."),
		},
		"RepointingTheOwnerIsDenied": {
			reason: "an owner reference whose uid changed points at no Subscription; the garbage collector would delete the plan",
			req:    admissiontest.Update(planGVR, "InstallPlan", plan(installing), plan(planOpts{phase: "Installing", approved: true, csvs: []any{"etcdoperator.v0.9.4"}, owners: []any{map[string]any{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription", "name": "etcd", "uid": "other"}}})).Build(),
			want: denied("installplanguard: InstallPlan operators/install-abcde is Installing and owned by Subscription operators/etcd; only OLM moves a plan through its phases, and a plan cut loose from its Subscription leaves the Subscription InstallPlanMissing or stuck. " +
				"Refused: removing the owner reference to Subscription operators/etcd. Instead, wait until it is Complete or Failed, or delete Subscription operators/etcd to cancel the install (the garbage collector then removes the plan)."),
		},
		"AddingAnotherOwnerIsAllowed": {
			reason: "the plan keeps its Subscription, so it stays protected",
			req:    admissiontest.Update(planGVR, "InstallPlan", plan(installing), plan(planOpts{phase: "Installing", approved: true, csvs: []any{"etcdoperator.v0.9.4"}, owners: ownedBy("etcd", "etcd-2")})).Build(),
			want:   allowed,
		},
		"ApprovalChangeWhilePlanInstallingWarns": {
			reason: "the new strategy applies to the next plan; the user must know",
			req:    admissiontest.Update(subGVR, "Subscription", sub("Manual", true), sub("Automatic", true)).Build(),
			plans:  fakePhases{"operators/install-abcde": "Installing"},
			want: verdict{Allowed: true, Code: http.StatusOK, Warnings: []string{
				"installplanguard: Subscription operators/etcd changes spec.installPlanApproval from Manual to Automatic while its InstallPlan operators/install-abcde is Installing; the change applies to the next InstallPlan, not to the one in flight.",
			}},
		},
		"UnsetApprovalCountsAsAutomatic": {
			reason: "OLM treats an unset installPlanApproval as Automatic",
			req:    admissiontest.Update(subGVR, "Subscription", sub("", true), sub("Automatic", true)).Build(),
			plans:  fakePhases{"operators/install-abcde": "Installing"},
			want:   allowed,
		},
		"ApprovalChangeWhilePlanCompleteIsSilent": {
			reason: "no plan is in flight, so the change takes effect as the user expects",
			req:    admissiontest.Update(subGVR, "Subscription", sub("Manual", true), sub("Automatic", true)).Build(),
			plans:  fakePhases{"operators/install-abcde": "Complete"},
			want:   allowed,
		},
		"ApprovalChangeWithUnknownPlanIsSilent": {
			reason: "a plan missing from the cache gives no grounds for a warning",
			req:    admissiontest.Update(subGVR, "Subscription", sub("Automatic", true), sub("Manual", true)).Build(),
			plans:  fakePhases{},
			want:   allowed,
		},
		"ApprovalChangeWithoutPlanRefIsSilent": {
			reason: "a Subscription with no plan yet has nothing in flight",
			req:    admissiontest.Update(subGVR, "Subscription", sub("Automatic", false), sub("Manual", false)).Build(),
			plans:  fakePhases{"operators/install-abcde": "Installing"},
			want:   allowed,
		},
		"ApprovalChangeWithoutCacheIsSilent": {
			reason: "offline (no cluster) the rule has no phases to look up",
			req:    admissiontest.Update(subGVR, "Subscription", sub("Manual", true), sub("Automatic", true)).Build(),
			want:   allowed,
		},
		"GarbageInstallPlanIsAnError": {
			reason: "an undecodable object is reported, not guessed about",
			req:    admissiontest.Delete(planGVR, "InstallPlan", []byte(`{"status":`)).Build(),
			want:   verdict{Code: http.StatusBadRequest, Message: "decoding InstallPlan: decoding object: unexpected EOF"},
		},
		"DeleteWithoutOldObjectIsAnError": {
			reason: "a DELETE without the stored object cannot be judged",
			req:    admissiontest.Delete(planGVR, "InstallPlan", nil).Build(),
			want:   verdict{Code: http.StatusBadRequest, Message: "decoding InstallPlan: the request carries no object"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := Config{}
			cfg.Default()
			r := New(cfg)
			if tc.plans != nil {
				r.plans = tc.plans
			}
			resp := ruletest.Judge(context.Background(), r, tc.req)
			got := verdictOf(resp)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nHandle(): -want +got:\n%s", tc.reason, diff)
			}
			assertSentWhenActing(t, r, tc.req, got)
		})
	}
}

// assertSentWhenActing checks the matchConditions against the verdict: a
// request the rule denies or warns about must be one the API server sends,
// or the rule would never act on it. (Malformed objects never come from the
// API server, which validates them against the CRD schema.)
func assertSentWhenActing(t *testing.T, r *Rule, req admission.Request, got verdict) {
	t.Helper()
	acts := !got.Allowed || len(got.Warnings) > 0
	if !acts || got.Code == http.StatusBadRequest {
		return
	}
	wh := r.Spec().Webhooks[0]
	if req.Kind.Kind == "Subscription" {
		wh = r.Spec().Webhooks[1]
	}
	celtest.RequireSent(t, wh, req, fmt.Sprintf("%+v", got))
}
