// Package installplanguard protects OLM InstallPlans that are in flight.
//
// Deleting an InstallPlan while OLM is still planning, waiting for approval
// or installing it leaves the owning Subscription InstallPlanMissing or
// stuck, and un-approving or rewriting a plan mid-install makes OLM miss
// phase changes. The rule refuses those writes from anyone but OLM and the
// cluster's own controllers, and warns when a Subscription's approval
// strategy changes under a plan that is installing.
package installplanguard

import (
	"context"
	"net/http"
	"slices"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Name is the rule's name: its config key, metric label and log field.
const Name = "installplanguard"

// PlanPhases reports the phase of an InstallPlan, from an informer cache.
// found is false when the plan is unknown (or the cache is not ready).
type PlanPhases interface {
	Phase(namespace, name string) (phase string, found bool)
}

// Rule is the installplanguard admission rule.
type Rule struct {
	cfg     Config
	allowed []string
	// plans is nil until SetupWithManager: rendering manifests and offline
	// checks have no cluster, and then no Subscription warning is given.
	plans PlanPhases
	now   func() time.Time
}

var (
	_ rule.Rule                 = (*Rule)(nil)
	_ clustercache.ManagerSetup = (*Rule)(nil)
	_ rule.Inheritor            = (*Rule)(nil)
)

// New builds the rule from its (defaulted) configuration. It does not touch
// any cluster.
func New(c Config) *Rule {
	return &Rule{cfg: c, allowed: slices.Concat(c.OLMUsers, c.ClusterControllerUsers), now: time.Now}
}

// Handle returns the rule's verdict for one request, as if enforced.
func (r *Rule) Handle(_ context.Context, req *rule.Request) admission.Response {
	if req.Kind.Group != group || slices.Contains(r.allowed, req.UserInfo.Username) {
		return admission.Allowed("")
	}
	switch {
	case req.Kind.Kind == "InstallPlan" && req.Operation == admissionv1.Delete:
		return r.deletePlan(req)
	case req.Kind.Kind == "InstallPlan" && req.Operation == admissionv1.Update && (req.SubResource == "" || req.SubResource == "status"):
		return r.updatePlan(req)
	case req.Kind.Kind == "Subscription" && req.Operation == admissionv1.Update && req.SubResource == "":
		return r.updateSubscription(req)
	}
	return admission.Allowed("")
}

func (r *Rule) deletePlan(req *rule.Request) admission.Response {
	plan, err := decodeInstallPlan(req.OldView())
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	subs := plan.subscriptions()
	if len(subs) == 0 || !slices.Contains(inFlight, plan.Status.Phase) {
		return admission.Allowed("")
	}
	return admission.Denied(deleteMessage(plan, subs))
}

// updatePlan refuses the writes that would turn an in-flight plan into one
// this rule no longer protects, so that a refused delete cannot be reached
// in two steps: dropping the owning Subscription or moving status.phase
// (only OLM moves a plan through its phases). While the plan is
// Installing, it also refuses withdrawing the approval or changing the
// CSVs it installs.
func (r *Rule) updatePlan(req *rule.Request) admission.Response {
	old, err := decodeInstallPlan(req.OldView())
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	subs := old.subscriptions()
	if len(subs) == 0 || !slices.Contains(inFlight, old.Status.Phase) {
		return admission.Allowed("")
	}
	plan, err := decodeInstallPlan(req.View())
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var unprotecting []string
	if plan.Status.Phase != old.Status.Phase {
		unprotecting = append(unprotecting, "status.phase from "+old.Status.Phase+" to "+quotedOrUnset(plan.Status.Phase))
	}
	if dropped := droppedOwners(old, plan); len(dropped) > 0 {
		unprotecting = append(unprotecting, "removing the owner reference to "+owners(old.Metadata.Namespace, dropped))
	}
	if len(unprotecting) > 0 {
		return admission.Denied(unprotectMessage(old, subs, unprotecting))
	}
	if old.Status.Phase != phaseInstalling {
		return admission.Allowed("")
	}
	var refused []string
	if old.Spec.Approved && !plan.Spec.Approved {
		refused = append(refused, "spec.approved from true to false")
	}
	if !sameNames(old.Spec.ClusterServiceVersionNames, plan.Spec.ClusterServiceVersionNames) {
		refused = append(refused, "spec.clusterServiceVersionNames from "+list(old.Spec.ClusterServiceVersionNames)+" to "+list(plan.Spec.ClusterServiceVersionNames))
	}
	if len(refused) == 0 {
		return admission.Allowed("")
	}
	return admission.Denied(updateMessage(old, subs, refused))
}

func (r *Rule) updateSubscription(req *rule.Request) admission.Response {
	old, err := decodeSubscription(req.OldView())
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	sub, err := decodeSubscription(req.View())
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if old.approval() == sub.approval() || r.plans == nil {
		return admission.Allowed("")
	}
	// The status the API server validates is the stored one; the old
	// object's is read first so a client cannot point it elsewhere.
	ns, name, ok := old.plan()
	if !ok {
		if ns, name, ok = sub.plan(); !ok {
			return admission.Allowed("")
		}
	}
	if phase, found := r.plans.Phase(ns, name); !found || phase != phaseInstalling {
		return admission.Allowed("")
	}
	return admission.Allowed("").WithWarnings(approvalWarning(sub, old.approval(), ns, name))
}

// sameNames compares CSV name lists as sets: a reordering is no change.
func sameNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
