package installplanguard

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
		Name            string     `json:"name"`
		Namespace       string     `json:"namespace"`
		OwnerReferences []ownerRef `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		Approved                   bool     `json:"approved"`
		ClusterServiceVersionNames []string `json:"clusterServiceVersionNames"`
	} `json:"spec"`
	Status struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

type ownerRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
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
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		InstallPlanApproval string `json:"installPlanApproval"`
	} `json:"spec"`
	Status struct {
		// InstallPlanRef is the current plan; InstallPlan is its older,
		// deprecated form that some OLM versions still fill alone.
		InstallPlanRef *struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"installPlanRef"`
		InstallPlan *struct {
			Name string `json:"name"`
		} `json:"installplan"`
	} `json:"status"`
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

func decodeInstallPlan(raw []byte) (*installPlan, error) {
	var p installPlan
	if err := decode(raw, &p); err != nil {
		return nil, fmt.Errorf("decoding InstallPlan: %w", err)
	}
	return &p, nil
}

func decodeSubscription(raw []byte) (*subscription, error) {
	var s subscription
	if err := decode(raw, &s); err != nil {
		return nil, fmt.Errorf("decoding Subscription: %w", err)
	}
	return &s, nil
}

func decode(raw []byte, into any) error {
	if len(raw) == 0 {
		return fmt.Errorf("the request carries no object")
	}
	return json.Unmarshal(raw, into)
}
