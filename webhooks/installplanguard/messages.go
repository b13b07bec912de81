package installplanguard

import (
	"fmt"
	"strings"
)

// deleteMessage explains a refused delete: which plan, which Subscriptions
// own it, its phase, and what to do instead.
func deleteMessage(p *installPlan, subs []string) string {
	ns, name := p.Metadata.Namespace, p.Metadata.Name
	return fmt.Sprintf("%s: InstallPlan %s/%s is %s and owned by %s; deleting it while OLM is still working on it leaves the Subscription InstallPlanMissing or stuck. Refused: delete. Instead, %s, or delete %s to cancel the install (the garbage collector then removes the plan).",
		Name, ns, name, p.Status.Phase, owners(ns, subs), instead(p), owners(ns, subs))
}

// updateMessage explains a refused change of a plan that is installing.
func updateMessage(p *installPlan, subs []string, refused []string) string {
	ns, name := p.Metadata.Namespace, p.Metadata.Name
	return fmt.Sprintf("%s: InstallPlan %s/%s is Installing and owned by %s; changing what it installs or withdrawing its approval mid-install leaves the Subscription stuck. Refused: %s. Instead, let the install finish (Complete or Failed); to hold back future upgrades set spec.installPlanApproval: Manual on the Subscription, or delete %s to cancel the install.",
		Name, ns, name, owners(ns, subs), strings.Join(refused, "; "), owners(ns, subs))
}

// unprotectMessage explains a refused write that would leave an in-flight
// plan without what makes it in flight: its owner or its phase.
func unprotectMessage(p *installPlan, subs []string, refused []string) string {
	ns, name := p.Metadata.Namespace, p.Metadata.Name
	return fmt.Sprintf("%s: InstallPlan %s/%s is %s and owned by %s; only OLM moves a plan through its phases, and a plan cut loose from its Subscription leaves the Subscription InstallPlanMissing or stuck. Refused: %s. Instead, %s, or delete %s to cancel the install (the garbage collector then removes the plan).",
		Name, ns, name, p.Status.Phase, owners(ns, subs), strings.Join(refused, "; "), instead(p), owners(ns, subs))
}

// instead says what to do with a plan in flight rather than delete or
// rewrite it.
func instead(p *installPlan) string {
	switch p.Status.Phase {
	case phaseRequiresApproval:
		return fmt.Sprintf("approve it (kubectl -n %s patch installplan %s --type merge -p '{\"spec\":{\"approved\":true}}')", p.Metadata.Namespace, p.Metadata.Name)
	case phaseInstalling:
		return "wait until it is Complete or Failed"
	}
	return "wait until OLM has finished planning it"
}

func quotedOrUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// approvalWarning tells that a changed approval strategy does not affect
// the plan that is installing.
func approvalWarning(s *subscription, from, planNS, planName string) string {
	return fmt.Sprintf("%s: Subscription %s/%s changes spec.installPlanApproval from %s to %s while its InstallPlan %s/%s is Installing; the change applies to the next InstallPlan, not to the one in flight.",
		Name, s.Metadata.Namespace, s.Metadata.Name, from, s.approval(), planNS, planName)
}

func owners(ns string, subs []string) string {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = ns + "/" + s
	}
	if len(names) == 1 {
		return "Subscription " + names[0]
	}
	return "Subscriptions " + strings.Join(names, ", ")
}

func list(names []string) string {
	return "[" + strings.Join(names, ", ") + "]"
}
