package gitops

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/rule"
)

// ObjectWebhook describes a guard's webhook for the objects its tool
// deployed: every guard's fails closed, with a timeout of three seconds,
// for the writes of ObjectRules, and sends only the requests whose object
// carries the tool's markers, from writers other than the tool and
// Kubernetes' controllers.
type ObjectWebhook struct {
	// Rule is the guard's name and Suffix the webhook's, as rule.Path
	// takes them.
	Rule, Suffix string
	// Tool names the tool in the failure policy's reason: "hand edits of
	// <Tool>-managed objects".
	Tool string
	// Reach is the rest of that reason: what keeps the webhook's blast
	// radius small.
	Reach string
	// Label, when set, is the label the objectSelector requires.
	Label string
	// Condition names the one matchCondition, whose expression is Select,
	// the clauses that leave the Agent out, ExcludedResources, Exclude and
	// ExcludeStatusKeepingMetadata, all of them.
	Condition       string
	Select, Exclude []string
	Agent           rule.Identities
}

// Webhook is the webhook w describes.
func (w ObjectWebhook) Webhook() rule.Webhook {
	clauses := slices.Concat(w.Select, IdentityClauses(w.Agent), []string{ExcludedResources}, w.Exclude, []string{ExcludeStatusKeepingMetadata()})
	wh := rule.Webhook{
		Name:          rule.WebhookName(w.Rule, w.Suffix),
		Path:          rule.Path(rule.Validating, w.Rule, w.Suffix),
		Rules:         ObjectRules(),
		FailurePolicy: admissionregistrationv1.Fail,
		FailurePolicyReason: "A guard that fails open is a silent bypass: while Steward is unreachable, hand edits of " + w.Tool +
			"-managed objects would go through unrecorded. The blast radius is small: " + w.Reach,
		TimeoutSeconds:  3,
		MatchConditions: []admissionregistrationv1.MatchCondition{{Name: w.Condition, Expression: AllOf(clauses...)}},
	}
	if w.Label != "" {
		// For UPDATE and DELETE the API server matches the selector
		// against the old object too, so removing the label still reaches
		// Steward.
		wh.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: w.Label, Operator: metav1.LabelSelectorOpExists},
		}}
	}
	return wh
}

// ChartLists are the lists of a guard's settings that the chart leaves
// out when empty: the agent's identities, which the object webhooks'
// matchConditions leave a clause out for, and keys, the guard's own.
func ChartLists(keys ...string) []rule.ChartList {
	out := []rule.ChartList{{Key: "agentUsers", OmitWhenEmpty: true}, {Key: "agentGroups", OmitWhenEmpty: true}}
	for _, k := range keys {
		out = append(out, rule.ChartList{Key: k, OmitWhenEmpty: true})
	}
	return out
}

// ObjectRules are the webhook rules of a guard's object webhook: every
// object, and the subresources that store it.
func ObjectRules() []admissionregistrationv1.RuleWithOperations {
	ops := rule.Operations(admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete)
	update := rule.Operations(admissionregistrationv1.Update)
	return []admissionregistrationv1.RuleWithOperations{
		// "*" covers every resource of every group and version, but no
		// subresource.
		rule.Resources(ops, []string{"*"}, []string{"*"}, []string{"*"}, admissionregistrationv1.AllScopes),
		// Writes through these subresources store the object they carry,
		// less what the subresource resets: a status write can strip
		// ownership markers or add an owner, ephemeral containers and
		// in-place resizes change a Pod's spec. An objectSelector still
		// applies, since their requests carry the whole object, and
		// matchConditions send status writes only when they change
		// metadata, so controllers' status updates cost no call.
		rule.Resources(update, []string{"*"}, []string{"*"}, []string{"*/status"}, admissionregistrationv1.AllScopes),
		rule.Resources(update, []string{""}, []string{"v1"}, []string{"pods/ephemeralcontainers", "pods/resize"}, admissionregistrationv1.NamespacedScope),
	}
}

// ScaleWebhook is a guard's webhook for the scale subresource of the
// workloads GitOps tools commonly deploy.
func ScaleWebhook(ruleName, tool string, agent rule.Identities) rule.Webhook {
	return rule.Webhook{
		Name:          rule.WebhookName(ruleName, "scale"),
		Path:          rule.Path(rule.Validating, ruleName, "scale"),
		Rules:         ScaleRules(),
		FailurePolicy: admissionregistrationv1.Ignore,
		FailurePolicyReason: "A Scale object carries no labels, so no objectSelector can narrow this webhook: it sees every scale request in the cluster, " +
			fmt.Sprintf("the HorizontalPodAutoscaler's included. Failing closed would let a Steward outage freeze autoscaling of every workload, %s-managed or not; ", tool) +
			"failing open only lets replica counts change while Steward is down.",
		TimeoutSeconds: 2,
		MatchConditions: []admissionregistrationv1.MatchCondition{{
			Name:       "not-" + strings.ToLower(strings.ReplaceAll(tool, " ", "")) + "-agent-autoscaler-or-kubernetes-controller",
			Expression: AllOf(append(IdentityClauses(agent), fmt.Sprintf("!(request.userInfo.username in %s)", CELList(Autoscalers())))...),
		}},
	}
}

// ByWriter splits a guard's object webhook in two by who writes, so that
// a Steward outage never stops the cluster's machinery:
//   - people (every user that is not a service account) keep wh's failure
//     policy, Fail: a guard that fails open for them is a silent bypass;
//   - service accounts other than the exempt ones get a second entry,
//     "<name>-serviceaccounts", with failurePolicy Ignore. They are
//     operators, cert-manager's cainjector, autoscalers, CI deployers: the
//     fields Git does not declare are theirs to change, and while Steward
//     is down their writes of Git's fields go through unjudged, as any
//     write did before Steward was installed, and the tool reverts them.
//
// Both entries are answered by the same rule. forPeople are service
// accounts that write people's edits (argocd-server's UI): they stay on
// the entry that fails closed.
func ByWriter(wh rule.Webhook, forPeople ...string) []rule.Webhook {
	account := isServiceAccount
	if len(forPeople) > 0 {
		account = fmt.Sprintf("(%s && !(request.userInfo.username in %s))", isServiceAccount, CELList(forPeople))
	}
	people, accounts := wh, wh
	people.MatchConditions = withFirstClause(wh.MatchConditions, "!"+account)
	accounts.MatchConditions = withFirstClause(wh.MatchConditions, account)
	accounts.Name = strings.TrimSuffix(wh.Name, ".steward.dev") + "-serviceaccounts.steward.dev"
	// rule.Path's form: "/validate/<rule>/<suffix>-serviceaccounts", or
	// ".../serviceaccounts" for the rule's main entry.
	if strings.Count(wh.Path, "/") > 2 {
		accounts.Path = wh.Path + "-serviceaccounts"
	} else {
		accounts.Path = wh.Path + "/serviceaccounts"
	}
	accounts.FailurePolicy = admissionregistrationv1.Ignore
	accounts.FailurePolicyReason = "Service accounts are the cluster's machinery (operators, cert-manager's cainjector, autoscalers): " +
		"while Steward is unreachable their writes pass unjudged rather than fail, so an outage never stops them; " +
		"a write of a field Git declares is then reverted by the GitOps tool as it would be without Steward. People's writes go to the entry without this suffix, which fails closed."
	return []rule.Webhook{people, accounts}
}

// isServiceAccount is true for writes by a service account.
const isServiceAccount = "request.userInfo.username.startsWith('system:serviceaccount:')"

// withFirstClause puts clause first in the expression of the first of
// conds (a copy): the writer decides the entry before anything else is
// read.
func withFirstClause(conds []admissionregistrationv1.MatchCondition, clause string) []admissionregistrationv1.MatchCondition {
	out := slices.Clone(conds)
	if len(out) == 0 {
		return []admissionregistrationv1.MatchCondition{{Name: "writer", Expression: clause}}
	}
	out[0].Expression = AllOf(clause, out[0].Expression)
	return out
}
