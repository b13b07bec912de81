package claimguard

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// managedCreate refuses a composed managed resource whose kind and
// crossplane.io/external-name equal those of one still being deleted: both
// would point at the same external resource, one creating or adopting it
// while the other destroys it.
func (r *Rule) managedCreate(s *snapshot, req admission.Request, gk schema.GroupKind) admission.Response {
	o, bad := decode(req, roleManaged)
	if bad != nil {
		return *bad
	}
	if o.externalName == "" {
		return admission.Allowed("")
	}
	w := s.managed[gk]
	if w == nil {
		return admission.Allowed(fmt.Sprintf("%s is not a managed resource kind (no CRD in the managed category)", gk))
	}
	if resp := usable(w, w.gvr.GroupResource().String()); resp != nil {
		return *resp
	}
	same := byIndex(w, indexExternalName, o.externalName)
	if len(same) == 0 {
		return admission.Allowed("")
	}
	sortFound(same)
	old := same[0]
	now := r.now()
	details := []string{"deleting for " + old.deletingFor(now).String()}
	if len(old.finalizers) > 0 {
		details = append(details, "finalizers: "+strings.Join(old.finalizers, ", "))
	}
	if old.owner != "" {
		by := "composed by " + ownerName(old.owner)
		if old.claim != "" {
			by += " for claim " + old.claim
		}
		details = append(details, by)
	}
	more := ""
	if len(same) > 1 {
		more = fmt.Sprintf(" (%d more %s with this external name %s deleting too)", len(same)-1, gk.Kind, isAre(len(same)-1))
	}
	return admission.Denied(fmt.Sprintf(
		"claimguard: %s with external name %q cannot be created yet: %s (%s) has the same external name and still manages that external resource%s; "+
			"a second %s would create or adopt it while the first deletes it. "+
			"Retry once %s is gone (%s).",
		named(gk.Kind, o.namespace, o.name), o.externalName, old, strings.Join(details, "; "), more,
		gk.Kind, old, kubectlGet(w.gvr.GroupResource(), old.namespace, old.name)))
}
