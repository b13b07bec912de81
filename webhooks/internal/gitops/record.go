package gitops

import (
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Record is where a tool keeps which objects it manages, which its guard
// reads: a Kustomization's status.inventory, an Application's
// status.resources. A guard is only as strong as the record, so only the
// tool may change it: rewritten by hand, it would drop an object from the
// guard (then edit it) or mark it for pruning (then delete it).
type Record struct {
	// Resource holds the record, written through SubResource ("status",
	// or "" when the kind has no status subresource).
	Resource    schema.GroupResource
	SubResource string
	// Path is the record's field.
	Path []string
}

func (r Record) matches(req *rule.Request) bool {
	return req.Resource.Group == r.Resource.Group && req.Resource.Resource == r.Resource.Resource && req.SubResource == r.SubResource
}

// record refuses a change of a tool's record by anyone but the tool; an
// allowed write goes on to be judged as any other (an Application that
// Argo CD itself manages, say).
func (g *Guard) record(req *rule.Request, r Record) admission.Response {
	if who, ok := g.Trusted(req.UserInfo); ok {
		return admission.Allowed("written by " + who)
	}
	if req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	oldView, curView := req.OldView(), req.View()
	if err := oldView.Err(); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("update, old object: %w", err))
	}
	if err := curView.Err(); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("update, new object: %w", err))
	}
	if object.Equal(oldView, curView, r.Path...) {
		return admission.Allowed("")
	}
	ref := RefOf(req, oldView)
	field := strings.Join(r.Path, ".")
	return admission.Denied(fmt.Sprintf("%s: %s's %s is %s's record of the objects it manages, which %s reads to tell them from look-alikes; only %s writes it. Changed: /%s%s",
		g.msg.rule, ref, field, g.msg.tool, g.msg.rule, g.msg.agent, strings.Join(r.Path, "/"), g.msg.emergency()))
}

// RecordWebhook registers a guard's records: updates of the resources
// that hold them, by anyone but the tool (matchConditions keep the tool's
// own writes away from Steward).
func RecordWebhook(ruleName string, agent rule.Identities, records []Record) rule.Webhook {
	update := rule.Operations(admissionregistrationv1.Update)
	var rules []admissionregistrationv1.RuleWithOperations
	for _, r := range records {
		res := r.Resource.Resource
		if r.SubResource != "" {
			res += "/" + r.SubResource
		}
		rules = append(rules, rule.Resources(update, []string{r.Resource.Group}, []string{"*"}, []string{res}, admissionregistrationv1.NamespacedScope))
	}
	return rule.Webhook{
		Name:          rule.WebhookName(ruleName, "records"),
		Path:          rule.Path(rule.Validating, ruleName, "records"),
		Rules:         rules,
		FailurePolicy: admissionregistrationv1.Fail,
		FailurePolicyReason: "The guard reads these records to tell managed objects from look-alikes; a record rewritten while Steward is down would drop objects from the guard. " +
			"Only people's writes reach Steward: matchConditions keep the tool's own status updates inside the API server.",
		TimeoutSeconds: 3,
		MatchConditions: []admissionregistrationv1.MatchCondition{{
			Name:       "not-the-tool-or-kubernetes-controller",
			Expression: AllOf(IdentityClauses(agent)...),
		}},
	}
}
