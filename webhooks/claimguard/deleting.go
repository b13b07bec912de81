package claimguard

import (
	objectview "github.com/stewardhq/steward/webhooks/object"

	"fmt"
	"net/http"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// deletingSuffix is the entry receiving updates of composite and composed
// resources that are being deleted and change a key claimguard finds them by.
const deletingSuffix = "deleting"

// trackedKeys are what claimguard finds a resource being deleted by: its
// claim, its composite resource and its external name. A person who could
// change them on a resource being deleted could hide it from the checks,
// then create the claim, XR or MR it refuses: the collision claimguard
// exists to prevent, reached in two steps.
var trackedKeys = []struct{ kind, key string }{
	{"label", labelClaimName},
	{"label", labelClaimNamespace},
	{"label", labelComposite},
	{"annotation", annotationExtName},
}

// deletingWebhook registers the guard of trackedKeys. Crossplane's own
// resources carry crossplane.io/composite (XRs name themselves in it), so
// the objectSelector sends nothing else, and matchConditions only updates
// of resources being deleted that change a tracked key: Crossplane and
// providers only remove finalizers then, and never reach Steward.
func deletingWebhook() rule.Webhook {
	var changed []string
	for _, k := range trackedKeys {
		field := "labels"
		if k.kind == "annotation" {
			field = "annotations"
		}
		changed = append(changed, celValue("object", field, k.key)+" != "+celValue("oldObject", field, k.key))
	}
	return rule.Webhook{
		Name:           rule.WebhookName(Name, deletingSuffix),
		Path:           rule.Path(rule.Validating, Name, deletingSuffix),
		FailurePolicy:  admissionregistrationv1.Fail,
		TimeoutSeconds: timeoutSeconds,
		FailurePolicyReason: "Only a person's change of a claim label, composite label or external name on a resource already being " +
			"deleted reaches Steward; failing open would let that change through while Steward is down.",
		MatchPolicy: admissionregistrationv1.Equivalent,
		Rules: []admissionregistrationv1.RuleWithOperations{
			rule.Resources(rule.Operations(admissionregistrationv1.Update), []string{"*"}, []string{"*"}, []string{"*"}, admissionregistrationv1.AllScopes),
		},
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: labelComposite, Operator: metav1.LabelSelectorOpExists,
		}}},
		MatchConditions: []admissionregistrationv1.MatchCondition{
			{Name: "not-leases-or-reviews", Expression: notLeasesOrReviews},
			{Name: "deleting-and-tracked-key-changed", Expression: "has(oldObject.metadata.deletionTimestamp) && (" + strings.Join(changed, " || ") + ")"},
		},
	}
}

const notLeasesOrReviews = `!(request.resource.group in ['coordination.k8s.io', 'authentication.k8s.io', 'authorization.k8s.io'])`

// celValue reads metadata.<field>[key] of obj, "" when absent.
func celValue(obj, field, key string) string {
	m := obj + ".metadata." + field
	return fmt.Sprintf("(has(%s) && %s in %s ? %s[%s] : '')", m, strconv.Quote(key), m, m, strconv.Quote(key))
}

// deletingUpdate refuses an update of a resource being deleted that changes
// a tracked key.
func (r *Rule) deletingUpdate(req *rule.Request) admission.Response {
	old, cur := req.OldView(), req.View()
	if err := old.FormErr(); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("old object: %w", err))
	}
	if !old.Deleting() {
		return admission.Allowed("")
	}
	if err := cur.FormErr(); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("object: %w", err))
	}
	var changes []string
	for _, k := range trackedKeys {
		get := func(v *objectview.View) string {
			val, _ := v.Label(k.key)
			if k.kind == "annotation" {
				val, _ = v.Annotation(k.key)
			}
			return val
		}
		if from, to := get(old), get(cur); from != to {
			changes = append(changes, fmt.Sprintf("%s %s from %s to %s", k.kind, k.key, quotedOrNone(from), quotedOrNone(to)))
		}
	}
	if len(changes) == 0 {
		return admission.Allowed("")
	}
	subject := named(req.Kind.Kind, req.Namespace, old.Name())
	return admission.Denied(fmt.Sprintf("%s: %s is being deleted; changing %s is refused: claimguard finds resources being deleted by their claim, composite resource and external name, "+
		"and refuses re-creating what would collide with them until they are gone. Wait until it is deleted.", Name, subject, strings.Join(changes, " and ")))
}

func quotedOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return strconv.Quote(s)
}
