package fleetguard

import (
	"fmt"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Name is the rule's name: its config key, metric label and log field.
const Name = "fleetguard"

// Spec registers fleetguard: one webhook for every labelled object, and
// one for the scale subresource of the workloads Fleet commonly deploys,
// whose metadata it reads.
func (r *Rule) Spec() rule.Spec {
	return rule.Spec{
		Name:     Name,
		Type:     rule.Validating,
		Webhooks: []rule.Webhook{r.mainWebhook(), r.scaleWebhook()},
		RBAC:     scaleRBAC(),
		// The agent's identities are the main webhook's matchCondition; it
		// leaves a clause out for an empty list.
		ChartLists: []rule.ChartList{{Key: "agentUsers", OmitWhenEmpty: true}, {Key: "agentGroups", OmitWhenEmpty: true}},
	}
}

func (r *Rule) mainWebhook() rule.Webhook {
	ops := rule.Operations(admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete)
	return rule.Webhook{
		Name: rule.WebhookName(Name, ""),
		Path: rule.Path(rule.Validating, Name, ""),
		Rules: []admissionregistrationv1.RuleWithOperations{
			// "*" covers every resource of every group and version, but no
			// subresource.
			rule.Resources(ops, []string{"*"}, []string{"*"}, []string{"*"}, admissionregistrationv1.AllScopes),
			// Writes through these subresources store the object they carry,
			// less what the subresource resets: a status write can strip
			// Fleet's keys or add an owner, ephemeral containers and
			// in-place resizes change a Pod's spec. The objectSelector still
			// applies, since their requests carry the whole object, and
			// matchConditions send status writes only when they change
			// metadata, so controllers' status updates cost no call.
			rule.Resources(rule.Operations(admissionregistrationv1.Update), []string{"*"}, []string{"*"}, []string{"*/status"}, admissionregistrationv1.AllScopes),
			rule.Resources(rule.Operations(admissionregistrationv1.Update), []string{""}, []string{"v1"}, []string{"pods/ephemeralcontainers", "pods/resize"}, admissionregistrationv1.NamespacedScope),
		},
		FailurePolicy: admissionregistrationv1.Fail,
		FailurePolicyReason: "A guard that fails open is a silent bypass: while Steward is unreachable, hand edits of Fleet-managed objects would go through unrecorded. " +
			"The blast radius is small: the objectSelector only sends objects carrying Fleet's label, and matchConditions keep the Fleet agent, the garbage collector, " +
			"the namespace controller and the other Kubernetes controllers away from Steward, so deployments by Fleet and namespace deletion keep working during an outage.",
		TimeoutSeconds: 3,
		// For UPDATE and DELETE the API server matches the selector against
		// the old object too, so removing the label still reaches Steward.
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: LabelHash, Operator: metav1.LabelSelectorOpExists},
		}},
		MatchConditions: []admissionregistrationv1.MatchCondition{{
			Name:       "not-agent-controller-lease-event-or-owned",
			Expression: allOf(append(r.identityClauses(), excludedResources, excludeAppliedWithOwner, excludeStatusKeepingMetadata)),
		}},
	}
}

func (r *Rule) scaleWebhook() rule.Webhook {
	return rule.Webhook{
		Name: rule.WebhookName(Name, "scale"),
		Path: rule.Path(rule.Validating, Name, "scale"),
		Rules: []admissionregistrationv1.RuleWithOperations{
			rule.Resources(rule.Operations(admissionregistrationv1.Update),
				[]string{"apps"}, []string{"*"}, []string{"deployments/scale", "statefulsets/scale", "replicasets/scale"},
				admissionregistrationv1.NamespacedScope),
			rule.Resources(rule.Operations(admissionregistrationv1.Update),
				[]string{""}, []string{"v1"}, []string{"replicationcontrollers/scale"},
				admissionregistrationv1.NamespacedScope),
		},
		FailurePolicy: admissionregistrationv1.Ignore,
		FailurePolicyReason: "A Scale object carries no labels, so no objectSelector can narrow this webhook: it sees every scale request in the cluster, " +
			"the HorizontalPodAutoscaler's included. Failing closed would let a Steward outage freeze autoscaling of every workload, Fleet-managed or not; " +
			"failing open only lets replica counts change while Steward is down.",
		TimeoutSeconds: 2,
		MatchConditions: []admissionregistrationv1.MatchCondition{{
			Name:       "not-fleet-agent-or-kubernetes-controller",
			Expression: allOf(r.identityClauses()),
		}},
	}
}

// identityClauses keep the Fleet agent's and Kubernetes' own writes from
// ever calling Steward: they cost no webhook round trip, and a Steward
// outage cannot block them. The agent's user name comes first: its writes
// are most of what the main webhook matches.
func (r *Rule) identityClauses() []string {
	var clauses []string
	if len(r.agentUsers) > 0 {
		clauses = append(clauses, fmt.Sprintf("!(request.userInfo.username in %s)", celList(r.agentUsers)))
	}
	if len(r.agentGroups) > 0 {
		clauses = append(clauses, fmt.Sprintf("(!has(request.userInfo.groups) || !request.userInfo.groups.exists(g, g in %s))", celList(r.agentGroups)))
	}
	return append(clauses, fmt.Sprintf("!(request.userInfo.username in %s) && (!has(request.userInfo.groups) || !(%s in request.userInfo.groups))",
		celList(kubernetesControllers), strconv.Quote(nodesGroup)))
}

// allOf joins clauses into the expression of one matchCondition. The API
// server evaluates every condition of a webhook for each request the
// webhook's rules and selectors match; as one expression, evaluation stops
// at the first clause that excludes the request (for the Fleet agent's
// writes, the first), which costs the API server a fraction of evaluating
// separate conditions (see docs/benchmarks.md).
func allOf(clauses []string) string {
	return strings.Join(clauses, " &&\n")
}

// excludedResources honours Steward's rule never to intercept Leases,
// Events, TokenReviews or SubjectAccessReviews, even if one were labelled.
const excludedResources = `!(request.resource.group in ['authentication.k8s.io', 'authorization.k8s.io'] ||
  (request.resource.group == 'coordination.k8s.io' && request.resource.resource == 'leases') ||
  (request.resource.group in ['', 'events.k8s.io'] && request.resource.resource == 'events'))`

// excludeAppliedWithOwner skips objects whose object set has an owner
// (Rancher's and Fleet's controllers apply their own objects that way),
// unless an update removes the owner: only requests in which every object
// present has the annotation are skipped.
const excludeAppliedWithOwner = `!(
  (object == null || (has(object.metadata) && has(object.metadata.annotations) && 'objectset.rio.cattle.io/owner-gvk' in object.metadata.annotations)) &&
  (oldObject == null || (has(oldObject.metadata) && has(oldObject.metadata.annotations) && 'objectset.rio.cattle.io/owner-gvk' in oldObject.metadata.annotations)))`

// excludeStatusKeepingMetadata skips status writes that leave the labels,
// annotations and owner references as they were: all fleetguard judges in
// a status write, and all that a controller's status update changes.
var excludeStatusKeepingMetadata = "!(has(request.subResource) && request.subResource == 'status' &&\n  " +
	strings.Join([]string{sameMetadata("labels"), sameMetadata("annotations"), sameMetadata("ownerReferences")}, " &&\n  ") + ")"

// sameMetadata is true when object and oldObject have the same
// metadata.<field>, or both lack it.
func sameMetadata(field string) string {
	o, old := "object.metadata."+field, "oldObject.metadata."+field
	return fmt.Sprintf("has(%s) == has(%s) && (!has(%s) || %s == %s)", o, old, o, o, old)
}

// celList renders strings as a CEL list literal.
func celList(ss []string) string {
	quoted := make([]string, len(ss))
	for i, s := range ss {
		quoted[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
