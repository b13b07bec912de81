package argocdguard

import (
	"fmt"
	"strconv"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Spec registers argocdguard: one webhook for objects carrying Argo CD's
// tracking id (an annotation, so matchConditions select them, not an
// objectSelector), and one for the scale subresource, whose workloads are
// found in the Applications' status.
func (r *Rule) Spec() rule.Spec {
	return rule.Spec{
		Name:     Name,
		Type:     rule.Validating,
		Webhooks: append(gitops.ByWriter(r.objectWebhook(), r.people...), gitops.ScaleWebhook(Name, "Argo CD", r.guard.Agent()), gitops.RecordWebhook(Name, r.guard.Agent(), records)),
		RBAC:     rbac(),
	}
}

func (r *Rule) objectWebhook() rule.Webhook {
	return gitops.ObjectWebhook{
		Rule: Name, Tool: "Argo CD",
		Reach: "matchConditions only send objects carrying Argo CD's tracking id, written by someone other than Argo CD's application controller, " +
			"the garbage collector, the namespace controller and the other Kubernetes controllers, so syncs and namespace deletion keep working during an outage.",
		Condition: "tracked-not-argocd-controller-lease-or-event", Agent: r.guard.Agent(), Select: []string{r.tracked()},
	}.Webhook()
}

// tracked selects requests in which either object carries the tracking id
// (or the tracking label, where configured): the API server matches no
// objectSelector on annotations, and an update that removes the id must
// still be judged. It comes first: with no objectSelector, the webhook's
// rules match every write in the cluster, and most objects carry no id.
func (r *Rule) tracked() string {
	has := func(obj, field, key string) string {
		return fmt.Sprintf("(%[1]s != null && has(%[1]s.metadata) && has(%[1]s.metadata.%[2]s) && %[3]s in %[1]s.metadata.%[2]s)", obj, field, strconv.Quote(key))
	}
	clauses := []string{has("object", "annotations", AnnotationTrackingID), has("oldObject", "annotations", AnnotationTrackingID)}
	if l := r.resolver.trackingLabel; l != "" {
		clauses = append(clauses, has("object", "labels", l), has("oldObject", "labels", l))
	}
	s := "("
	for i, c := range clauses {
		if i > 0 {
			s += " ||\n  "
		}
		s += c
	}
	return s + ")"
}

// Chart is what the Helm chart does with argocdguard's settings.
func (*Rule) Chart() rule.Chart {
	return rule.Chart{
		Lists: gitops.ChartLists("serverUsers"),
		// Both are written into the matchConditions as clauses, not
		// lists: the chart renders the defaults' clauses only.
		Refused: []rule.ChartRefusal{
			{Key: "trackingLabel", Why: "adds the label to what the webhooks' matchConditions send to Steward"},
			{Key: "uiEditsAreGitOps", Allowed: []string{"false"}, Why: "takes argocd-server's writes out of what the webhooks' matchConditions send to Steward"},
		},
	}
}

// Monitoring is argocdguard's part of Steward's alerts and dashboard.
func (*Rule) Monitoring() rule.Monitoring {
	return rule.Monitoring{Unsynced: "argocdguard cannot tell whether an object's Application exists, answers with an error, and the object webhook's failure policy (Fail) refuses the write"}
}
