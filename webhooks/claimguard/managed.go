package claimguard

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// managedCreate refuses a composed managed resource whose provider kind
// and crossplane.io/external-name equal those of one still being deleted:
// both would point at the same external resource, one creating or adopting
// it while the other destroys it. The provider kind spans the legacy
// cluster-scoped group and the namespaced ".m." group of Crossplane v2
// providers (see pair.go), so migrating an MR from one to the other is
// held back the same way.
func (r *Rule) managedCreate(s *snapshot, req *rule.Request, gk schema.GroupKind) admission.Response {
	o, bad := decode(req, roleManaged)
	if bad != nil {
		return *bad
	}
	if o.externalName() == "" {
		return admission.Allowed("")
	}
	w := s.managed[gk]
	if w == nil {
		return admission.Allowed(fmt.Sprintf("%s is not a managed resource kind (no CRD in the managed category)", gk))
	}
	var same []found
	var warnings []string
	gvrs := map[schema.GroupKind]schema.GroupResource{}
	for _, pw := range s.sameExternalResources(w) {
		if resp := usable(pw, pw.gvr.GroupResource().String()); resp != nil {
			if !resp.Allowed {
				return *resp
			}
			warnings = append(warnings, resp.Warnings...)
			continue
		}
		gvrs[pw.gk] = pw.gvr.GroupResource()
		same = append(same, byIndex(pw, indexExternalName, o.externalName())...)
	}
	if len(same) == 0 {
		resp := admission.Allowed("")
		if len(warnings) > 0 {
			resp = resp.WithWarnings(warnings...)
		}
		return resp
	}
	sortFound(same)
	old := same[0]
	now := r.now()
	details := []string{"deleting for " + old.deletingFor(now).String()}
	if old.finalizers.any() {
		details = append(details, "finalizers: "+old.finalizers.String())
	}
	if old.owner != "" {
		by := "composed by " + ownerName(old.owner)
		if old.claim() != "" {
			by += " for claim " + old.claim()
		}
		details = append(details, by)
	}
	more := ""
	if len(same) > 1 {
		more = fmt.Sprintf(" (%d more %s with this external name %s deleting too)", len(same)-1, gk.Kind, isAre(len(same)-1))
	}
	oldName, why := old.String(), "a second "+gk.Kind
	if old.gk.Group != gk.Group {
		// The legacy and the namespaced kind share the Kind name; the
		// message names the group and why the two collide.
		legacy, namespaced := old.gk.Group, gk.Group
		if !w.namespaced {
			legacy, namespaced = gk.Group, old.gk.Group
		}
		oldName += " in " + old.gk.Group
		why = fmt.Sprintf("%s and %s are the legacy cluster-scoped and the namespaced group of the same provider kind, so a second %s", legacy, namespaced, gk.Kind)
	}
	return admission.Denied(fmt.Sprintf(
		"claimguard: %s with external name %q cannot be created yet: %s (%s) has the same external name and still manages that external resource%s; "+
			"%s would create or adopt it while the first deletes it. "+
			"Retry once %s is gone (%s).",
		named(gk.Kind, o.namespace(), o.name()), o.externalName(), oldName, strings.Join(details, "; "), more,
		why, old, kubectlGet(gvrs[old.gk], old.namespace(), old.name())))
}
