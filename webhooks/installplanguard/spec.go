package installplanguard

import (
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Spec registers two webhooks: InstallPlan deletes and updates (refusals),
// and Subscription updates (warnings only). matchConditions keep OLM's own
// traffic, the cluster controllers', and every write the rule would allow
// anyway inside the API server.
func (r *Rule) Spec() rule.Spec {
	excludeUsers := admissionregistrationv1.MatchCondition{
		Name:       "not-olm-or-cluster-controllers",
		Expression: "!(request.userInfo.username in " + celList(r.allowed) + ")",
	}
	return rule.Spec{
		Name: Name,
		Type: rule.Validating,
		RBAC: RBAC(),
		// excludeUsers holds both lists; Default fills an empty one.
		Webhooks: []rule.Webhook{
			{
				Name: rule.WebhookName(Name, ""),
				Path: rule.Path(rule.Validating, Name, ""),
				// installplans/status too: a status write can move the phase.
				Rules: []admissionregistrationv1.RuleWithOperations{rule.Resources(
					rule.Operations(admissionregistrationv1.Delete, admissionregistrationv1.Update),
					[]string{group}, []string{"v1alpha1"}, []string{"installplans", "installplans/status"}, admissionregistrationv1.NamespacedScope)},
				FailurePolicy:       admissionregistrationv1.Fail,
				FailurePolicyReason: "A deleted in-flight InstallPlan cannot be brought back. Only people's deletes and edits of in-flight plans reach Steward (OLM, the garbage collector and the namespace controller are excluded by matchConditions), so an unavailable Steward delays those and nothing else.",
				TimeoutSeconds:      3,
				MatchPolicy:         admissionregistrationv1.Equivalent,
				MatchConditions: []admissionregistrationv1.MatchCondition{
					excludeUsers,
					{Name: "plan-in-flight-owned-by-subscription", Expression: planInFlight},
					{Name: "delete-or-refused-change", Expression: deleteOrRefusedChange},
				},
			},
			{
				Name: rule.WebhookName(Name, "subscriptions"),
				Path: rule.Path(rule.Validating, Name, "subscriptions"),
				Rules: []admissionregistrationv1.RuleWithOperations{rule.Resources(
					rule.Operations(admissionregistrationv1.Update),
					[]string{group}, []string{"v1alpha1"}, []string{"subscriptions"}, admissionregistrationv1.NamespacedScope)},
				FailurePolicy:       admissionregistrationv1.Ignore,
				FailurePolicyReason: "Subscription changes only get a warning; they must never fail because Steward is unavailable.",
				TimeoutSeconds:      3,
				MatchPolicy:         admissionregistrationv1.Equivalent,
				MatchConditions: []admissionregistrationv1.MatchCondition{
					excludeUsers,
					{Name: "install-plan-approval-changed", Expression: approvalChanged},
					{Name: "has-install-plan", Expression: hasInstallPlan},
				},
			},
		},
	}
}

// The CEL below is written for objects whose fields may be missing: every
// field is guarded by has() before it is read, since an error in a match
// condition makes the API server apply the failure policy.
var (
	planInFlight = "has(oldObject.metadata.ownerReferences) && " +
		"oldObject.metadata.ownerReferences.exists(o, " + isSubscription("o") + ") && " +
		"has(oldObject.status) && has(oldObject.status.phase) && oldObject.status.phase in " + celList(inFlight)

	// deleteOrRefusedChange mirrors updatePlan: a delete; a write that
	// moves the phase or drops an owning Subscription (the two things that
	// make a plan in flight); or, while Installing, withdrawing the
	// approval or changing the CSVs.
	deleteOrRefusedChange = "request.operation == 'DELETE' || " +
		phase("object") + " != oldObject.status.phase || " +
		"!oldObject.metadata.ownerReferences.all(o, !(" + isSubscription("o") + ") || " +
		"(has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(n, " + sameOwner("n", "o") + "))) || " +
		"(oldObject.status.phase == '" + phaseInstalling + "' && ((" + approved("oldObject") + " && !" + approved("object") + ") || " +
		csvNames("oldObject") + " != " + csvNames("object") + "))"

	approvalChanged = approval("object") + " != " + approval("oldObject")

	hasInstallPlan = "has(oldObject.status) && (has(oldObject.status.installPlanRef) || has(oldObject.status.installplan))"
)

func isSubscription(ref string) string {
	return ref + ".kind == 'Subscription' && has(" + ref + ".apiVersion) && " + ref + ".apiVersion.startsWith('" + group + "/') && has(" + ref + ".name) && " + ref + ".name != ''"
}

// sameOwner compares the fields of two owner references that droppedOwners
// compares.
func sameOwner(a, b string) string {
	var parts []string
	for _, f := range []string{"apiVersion", "kind", "name", "uid"} {
		parts = append(parts, "(has("+a+"."+f+") ? "+a+"."+f+" : '') == (has("+b+"."+f+") ? "+b+"."+f+" : '')")
	}
	return strings.Join(parts, " && ")
}

func phase(obj string) string {
	return "(has(" + obj + ".status) && has(" + obj + ".status.phase) ? " + obj + ".status.phase : '')"
}

func approved(obj string) string {
	return "(has(" + obj + ".spec) && has(" + obj + ".spec.approved) && " + obj + ".spec.approved == true)"
}

func csvNames(obj string) string {
	return "(has(" + obj + ".spec) && has(" + obj + ".spec.clusterServiceVersionNames) ? " + obj + ".spec.clusterServiceVersionNames : [])"
}

func approval(obj string) string {
	return "(has(" + obj + ".spec) && has(" + obj + ".spec.installPlanApproval) && " + obj + ".spec.installPlanApproval != '' ? " +
		obj + ".spec.installPlanApproval : '" + approvalAutomatic + "')"
}

// celList renders strings as a CEL list literal. Go's quoting is valid CEL
// string syntax for every string.
func celList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// Chart is what the Helm chart does with installplanguard's settings.
func (*Rule) Chart() rule.Chart {
	return rule.Chart{
		Lists: []rule.ChartList{{Key: "olmUsers", EmptyMeansDefault: true}, {Key: "clusterControllerUsers", EmptyMeansDefault: true}},
	}
}

// Monitoring is installplanguard's part of Steward's alerts and dashboard.
func (*Rule) Monitoring() rule.Monitoring {
	return rule.Monitoring{Unsynced: "installplanguard cannot tell whether an InstallPlan is installing"}
}
