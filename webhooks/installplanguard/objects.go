package installplanguard

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/stewardhq/steward/webhooks/object"
)

// OLM's names, as in operator-framework/api (operators/v1alpha1).
const (
	group = "operators.coreos.com"

	phasePlanning         = "Planning"
	phaseRequiresApproval = "RequiresApproval"
	phaseInstalling       = "Installing"

	approvalAutomatic = "Automatic"
)

// inFlight are the phases in which OLM still acts on a plan. Complete and
// Failed plans are history: deleting or editing them harms nothing.
var inFlight = []string{phasePlanning, phaseRequiresApproval, phaseInstalling}

// installPlan is the part of an InstallPlan the rule reads.
type installPlan struct {
	Metadata struct {
		Name, Namespace string
		OwnerReferences []ownerRef
	}
	Spec struct {
		Approved                   bool
		ClusterServiceVersionNames []string
	}
	Status struct {
		Phase string
	}
}

// ownerRef is an owner reference as the rule compares them: by value.
type ownerRef struct {
	APIVersion, Kind, Name, UID string
}

func (o ownerRef) subscription() bool {
	return o.Kind == "Subscription" && strings.HasPrefix(o.APIVersion, group+"/") && o.Name != ""
}

// subscriptions names the Subscriptions that own the plan. OLM resolves the
// Subscriptions of one namespace together, so a plan may have several.
func (p *installPlan) subscriptions() []string {
	var names []string
	for _, o := range p.Metadata.OwnerReferences {
		if o.subscription() {
			names = append(names, o.Name)
		}
	}
	return names
}

// droppedOwners names the owning Subscriptions whose references old has
// and plan no longer has exactly: a reference whose uid changed points at
// no object, and the garbage collector deletes a plan whose owners are
// all gone.
func droppedOwners(old, plan *installPlan) []string {
	var names []string
	for _, o := range old.Metadata.OwnerReferences {
		if o.subscription() && !slices.Contains(plan.Metadata.OwnerReferences, o) {
			names = append(names, o.Name)
		}
	}
	return names
}

// subscription is the part of a Subscription the rule reads.
type subscription struct {
	Metadata struct {
		Name, Namespace string
	}
	Spec struct {
		InstallPlanApproval string
	}
	Status struct {
		// InstallPlanRef is the current plan; InstallPlan is its older,
		// deprecated form that some OLM versions still fill alone.
		InstallPlanRef, InstallPlan *statusPlan
	}
}

// statusPlan names an InstallPlan from a Subscription's status.
type statusPlan struct {
	Name, Namespace string
}

// approval is the effective spec.installPlanApproval: OLM treats an unset
// value as Automatic.
func (s *subscription) approval() string {
	if s.Spec.InstallPlanApproval == "" {
		return approvalAutomatic
	}
	return s.Spec.InstallPlanApproval
}

// plan returns the namespace and name of the Subscription's current plan.
func (s *subscription) plan() (namespace, name string, ok bool) {
	switch {
	case s.Status.InstallPlanRef != nil && s.Status.InstallPlanRef.Name != "":
		ns := s.Status.InstallPlanRef.Namespace
		if ns == "" {
			ns = s.Metadata.Namespace
		}
		return ns, s.Status.InstallPlanRef.Name, true
	case s.Status.InstallPlan != nil && s.Status.InstallPlan.Name != "":
		return s.Metadata.Namespace, s.Status.InstallPlan.Name, true
	}
	return "", "", false
}

// decodeInstallPlan reads an InstallPlan through its view. Fields of a
// shape the API server's validation never lets through read as unset.
func decodeInstallPlan(v *object.View) (*installPlan, error) {
	if err := v.FormErr(); err != nil {
		return nil, fmt.Errorf("decoding InstallPlan: %w", err)
	}
	var p installPlan
	p.Metadata.Name, p.Metadata.Namespace = v.Name(), v.Namespace()
	for _, o := range v.OwnerReferences() {
		p.Metadata.OwnerReferences = append(p.Metadata.OwnerReferences, ownerRef{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: string(o.UID)})
	}
	p.Spec.Approved = string(v.Field("spec", "approved")) == "true"
	_ = json.Unmarshal(v.Field("spec", "clusterServiceVersionNames"), &p.Spec.ClusterServiceVersionNames)
	p.Status.Phase = v.String("status", "phase")
	return &p, nil
}

// decodeSubscription reads a Subscription through its view, as
// decodeInstallPlan reads a plan.
func decodeSubscription(v *object.View) (*subscription, error) {
	if err := v.FormErr(); err != nil {
		return nil, fmt.Errorf("decoding Subscription: %w", err)
	}
	var s subscription
	s.Metadata.Name, s.Metadata.Namespace = v.Name(), v.Namespace()
	s.Spec.InstallPlanApproval = v.String("spec", "installPlanApproval")
	if v.Field("status", "installPlanRef") != nil {
		s.Status.InstallPlanRef = &statusPlan{Name: v.String("status", "installPlanRef", "name"), Namespace: v.String("status", "installPlanRef", "namespace")}
	}
	if v.Field("status", "installplan") != nil {
		s.Status.InstallPlan = &statusPlan{Name: v.String("status", "installplan", "name")}
	}
	return &s, nil
}
