package installplanguard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/rule"
)

// The audit's checks.
const (
	// CheckPlanMissing: a Subscription whose InstallPlan is gone (fail).
	CheckPlanMissing = "installplan-missing"
	// CheckPlanStuck: a Subscription whose InstallPlan has waited for
	// approval or installed for longer than stuckAfter, or failed (warn).
	CheckPlanStuck = "installplan-stuck"
)

// Timings of the audit.
const (
	// stuckAfter is how long a plan may wait for approval or install
	// before the audit reports it: an install takes minutes, and a
	// plan waiting for approval a quarter of an hour has been missed.
	stuckAfter = 15 * time.Minute
	// settleFor is how long after a Subscription's status changed a plan
	// it names may still be missing from the cache: OLM creates the plan
	// and then points the Subscription at it, and the two caches hear of
	// them separately.
	settleFor   = time.Minute
	phaseFailed = "Failed"
)

// planState is what the audit reads of a cached InstallPlan.
type planState struct {
	phase   string
	created time.Time
}

// subscriptionAudit is what the audit reads from the caches.
type subscriptionAudit interface {
	// subscriptions lists the cached Subscriptions; it errs while either
	// cache cannot answer.
	subscriptions() ([]*unstructured.Unstructured, error)
	// plan looks a cached plan up.
	plan(namespace, name string) (planState, bool)
}

var _ rule.Auditor = (*Rule)(nil)

// Audit reports Subscriptions whose InstallPlan is missing (the
// InstallPlanMissing condition, or a status.installPlanRef naming a plan
// that does not exist) and those whose plan is stuck: Failed
// (InstallPlanFailed), or RequiresApproval or Installing
// (InstallPlanPending) for longer than 15 minutes.
func (r *Rule) Audit(context.Context, client.Reader) ([]rule.Finding, error) {
	caches, ok := r.plans.(subscriptionAudit)
	if !ok {
		return nil, errors.New("installplanguard: the InstallPlan and Subscription caches are not set up")
	}
	subs, err := caches.subscriptions()
	if err != nil {
		return nil, err
	}
	now := r.now()
	var out []rule.Finding
	for _, s := range subs {
		if f, ok := auditSubscription(s, caches.plan, now); ok {
			out = append(out, f)
		}
	}
	return out, nil
}

// subscriptions lists the cached Subscriptions, once both caches can
// answer.
func (p phases) subscriptions() ([]*unstructured.Unstructured, error) {
	if _, err := p.set.List(installPlans); err != nil {
		return nil, err
	}
	objs, err := p.set.List(subscriptions)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out, nil
}

// condition is one of a Subscription's status.conditions.
type condition struct {
	status, reason, message string
	since                   time.Time
}

func conditions(s *unstructured.Unstructured) map[string]condition {
	list, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
	out := map[string]condition{}
	for _, c := range list {
		m, _ := c.(map[string]any)
		t, _ := m["type"].(string)
		if t == "" {
			continue
		}
		cond := condition{}
		cond.status, _ = m["status"].(string)
		cond.reason, _ = m["reason"].(string)
		cond.message, _ = m["message"].(string)
		if at, ok := m["lastTransitionTime"].(string); ok {
			cond.since, _ = time.Parse(time.RFC3339, at)
		}
		out[t] = cond
	}
	return out
}

// planRef is the plan a Subscription's status names.
func planRef(s *unstructured.Unstructured) (namespace, name string, ok bool) {
	name, _, _ = unstructured.NestedString(s.Object, "status", "installPlanRef", "name")
	namespace, _, _ = unstructured.NestedString(s.Object, "status", "installPlanRef", "namespace")
	if name == "" {
		name, _, _ = unstructured.NestedString(s.Object, "status", "installplan", "name")
		namespace = ""
	}
	if namespace == "" {
		namespace = s.GetNamespace()
	}
	return namespace, name, name != ""
}

// auditSubscription is the finding for one Subscription, if any: a
// missing plan before a stuck one.
func auditSubscription(s *unstructured.Unstructured, plans func(ns, name string) (planState, bool), now time.Time) (rule.Finding, bool) {
	ns, name := s.GetNamespace(), s.GetName()
	conds := conditions(s)
	planNS, planName, hasRef := planRef(s)
	props := map[string]string{}
	if hasRef {
		props["installPlan"] = planNS + "/" + planName
	}
	if state, _, _ := unstructured.NestedString(s.Object, "status", "state"); state != "" {
		props["state"] = state
	}
	finding := func(check string, result rule.AuditResult, msg string) (rule.Finding, bool) {
		return rule.Finding{
			Check:  check,
			Result: result,
			Object: corev1.ObjectReference{
				APIVersion: s.GetAPIVersion(), Kind: "Subscription", Namespace: ns, Name: name, UID: s.GetUID(),
			},
			Message:    msg,
			Properties: props,
		}, true
	}

	if c, ok := conds[conditionPlanMissing]; ok && c.status == "True" {
		props["condition"] = conditionPlanMissing
		props["reason"] = c.reason
		return finding(CheckPlanMissing, rule.AuditFail, missingMessage(ns, name, planNS, planName, hasRef))
	}
	var plan planState
	var planFound bool
	if hasRef {
		plan, planFound = plans(planNS, planName)
		if !planFound && settled(s, now) {
			return finding(CheckPlanMissing, rule.AuditFail, missingMessage(ns, name, planNS, planName, true))
		}
	}

	if c, ok := conds[conditionPlanFailed]; ok && c.status == "True" {
		props["condition"], props["reason"] = conditionPlanFailed, c.reason
		return finding(CheckPlanStuck, rule.AuditWarn, failedMessage(ns, name, planNS, planName, c.message))
	}
	if planFound && plan.phase == phaseFailed {
		props["phase"] = phaseFailed
		return finding(CheckPlanStuck, rule.AuditWarn, failedMessage(ns, name, planNS, planName, ""))
	}
	if c, ok := conds[conditionPlanPending]; ok && c.status == "True" && !c.since.IsZero() && now.Sub(c.since) > stuckAfter {
		props["condition"], props["reason"] = conditionPlanPending, c.reason
		props["since"] = c.since.UTC().Format(time.RFC3339)
		phase := c.reason
		if planFound {
			phase = plan.phase
		}
		return finding(CheckPlanStuck, rule.AuditWarn, pendingMessage(ns, name, planNS, planName, phase, c.since))
	}
	if planFound && (plan.phase == phaseRequiresApproval || plan.phase == phaseInstalling) && !plan.created.IsZero() && now.Sub(plan.created) > stuckAfter {
		if _, pending := conds[conditionPlanPending]; !pending {
			props["phase"] = plan.phase
			props["since"] = plan.created.UTC().Format(time.RFC3339)
			return finding(CheckPlanStuck, rule.AuditWarn, pendingMessage(ns, name, planNS, planName, plan.phase, plan.created))
		}
	}
	return rule.Finding{}, false
}

// settled says whether a Subscription's status last changed long enough
// ago that a plan it names and the cache lacks is truly gone.
func settled(s *unstructured.Unstructured, now time.Time) bool {
	at, _, _ := unstructured.NestedString(s.Object, "status", "lastUpdated")
	t, err := time.Parse(time.RFC3339, at)
	return err != nil || now.Sub(t) > settleFor
}

func missingMessage(ns, name, planNS, planName string, hasRef bool) string {
	plan := "its InstallPlan"
	if hasRef {
		plan = fmt.Sprintf("its InstallPlan %s/%s", planNS, planName)
	}
	return fmt.Sprintf("Subscription %s/%s is InstallPlanMissing: %s no longer exists, so OLM cannot finish installing or upgrading the operator. Delete the Subscription and apply it again to have OLM plan the install anew.",
		ns, name, plan)
}

func failedMessage(ns, name, planNS, planName, why string) string {
	msg := fmt.Sprintf("Subscription %s/%s is stuck: its InstallPlan %s/%s Failed, and OLM does not retry a failed plan.", ns, name, planNS, planName)
	if why != "" {
		msg += " OLM says: " + why + "."
	}
	return msg + fmt.Sprintf(" Fix the cause (kubectl -n %s get installplan %s -o yaml shows it), then delete the Subscription and apply it again.", planNS, planName)
}

// pendingMessage names when the wait began rather than how long it has
// lasted, so the message, and the report holding it, stay the same from
// one audit to the next.
func pendingMessage(ns, name, planNS, planName, phase string, since time.Time) string {
	p := &installPlan{}
	p.Metadata.Namespace, p.Metadata.Name, p.Status.Phase = planNS, planName, phase
	return fmt.Sprintf("Subscription %s/%s is stuck: its InstallPlan %s/%s has been %s since %s. Instead of deleting the plan, %s.",
		ns, name, planNS, planName, phase, since.UTC().Format(time.RFC3339), instead(p))
}

// sortFindings orders findings by namespace and name, for tests.
func sortFindings(f []rule.Finding) {
	sort.Slice(f, func(i, j int) bool {
		a, b := f[i].Object, f[j].Object
		return slices.Compare([]string{a.Namespace, a.Name}, []string{b.Namespace, b.Name}) < 0
	})
}
