package claimguard

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// systemDeleters are Kubernetes' own controllers, whose deletes
// requireForegroundDelete never refuses: blocking them would stall
// namespace deletion and garbage collection.
var systemDeleters = []string{
	"system:serviceaccount:kube-system:namespace-controller",
	"system:serviceaccount:kube-system:generic-garbage-collector",
	"system:kube-controller-manager",
}

// compositeCreate refuses a composite resource while
//   - another XR of the same claim is still being deleted (the claim
//     controller's retries; its events then carry the reason), or
//   - an XR of the same kind, namespace and name is still being deleted, or
//     is gone while the resources it composed are still being deleted or
//     await garbage collection (v2 XRs re-created by a GitOps tool).
func (r *Rule) compositeCreate(s *snapshot, req *rule.Request, x *xrd) admission.Response {
	o, bad := decode(req, roleComposite)
	if bad != nil {
		return *bad
	}
	w := s.composites[x.compositeGK()]
	if resp := usable(w, x.compositeGR().String()); resp != nil {
		return *resp
	}
	now := r.now()
	this := named(x.compositeKind, o.namespace(), o.name())
	if o.claim() != "" {
		var others []found
		for _, f := range onlyDeleting(byIndex(w, indexClaim, o.claim())) {
			if f.key() != o.key() {
				others = append(others, f)
			}
		}
		if len(others) > 0 {
			sortFound(others)
			old := others[0]
			cov := &coverage{}
			holders := s.composed(w.gk, old.object, w.namespaced, cov)
			return admission.Denied(fmt.Sprintf(
				"claimguard: %s for claim %s cannot be created yet: %s of the same claim has been deleting for %s and %s. "+
					"A new composite resource would compose new resources with the same external names while the old ones are still deleting theirs. "+
					"Retry once %s is gone (%s).",
				this, o.claim(), old, old.deletingFor(now), heldBy(old, holders, now), old, kubectlGet(w.gvr.GroupResource(), old.namespace(), old.name())))
		}
	}
	if o.name() == "" {
		return admission.Allowed("")
	}
	if item, exists, _ := w.indexer.GetByKey(o.key()); exists {
		old, ok := item.(*object)
		if !ok || !old.deleting() {
			// The API server refuses the create with AlreadyExists.
			return admission.Allowed("")
		}
		f := found{object: old, gk: w.gk}
		cov := &coverage{}
		holders := s.composed(w.gk, old, w.namespaced, cov)
		return admission.Denied(fmt.Sprintf(
			"claimguard: %s cannot be created yet: the previous %s has been deleting for %s and %s. "+
				"Retry once it is gone (%s).",
			this, f, old.deletingFor(now), heldBy(f, holders, now), kubectlGet(w.gvr.GroupResource(), old.namespace(), old.name())))
	}
	cov := &coverage{}
	left := s.composed(w.gk, &object{id: o.ident()}, w.namespaced, cov)
	if len(left) > 0 {
		return admission.Denied(fmt.Sprintf(
			"claimguard: %s cannot be created yet: %s composed by the previous %s %s still being deleted or awaiting garbage collection: %s. "+
				"A new %s would compose new resources with the same external names while the old ones are still deleting theirs. "+
				"Retry once they are gone.",
			this, count(len(left), "resource"), this, isAre(len(left)), listed(left, now), x.compositeKind))
	}
	return withUnchecked(admission.Allowed(""), cov)
}

// compositeDelete warns when deleting an XR waits for its composed
// resources (Foreground propagation), and with requireForegroundDelete
// refuses other propagation for XRs that nothing else deletes.
func (r *Rule) compositeDelete(s *snapshot, req *rule.Request, x *xrd) admission.Response {
	o, bad := decode(req, roleComposite)
	if bad != nil {
		return *bad
	}
	policy, err := propagationPolicy(req.Options.Raw)
	if err != nil {
		return admission.Errored(400, err)
	}
	foreground := policy == metav1.DeletePropagationForeground || slices.Contains(o.finalizers, foregroundFinalizer)
	namespaced := o.namespace() != ""
	cov := &coverage{}
	holders := s.composed(x.compositeGK(), o.object, namespaced, cov)
	this := named(x.compositeKind, o.namespace(), o.name())
	if !foreground && r.cfg.RequireForegroundDelete && o.claim() == "" && !o.controlled && !slices.Contains(systemDeleters, req.UserInfo.Username) {
		shown := string(policy)
		if shown == "" {
			shown = "Background (the default)"
		}
		return admission.Denied(fmt.Sprintf(
			"claimguard: %s must be deleted with Foreground propagation in this cluster, not %s: a Background delete removes it at once while its composed resources (%d now) are still deleting their external resources, "+
				"and a re-created %s would compose new resources with the same external names. "+
				"Repeat with kubectl delete --cascade=foreground (propagationPolicy: Foreground).",
			this, shown, len(holders), this))
	}
	if !foreground || len(holders) == 0 {
		return withUnchecked(admission.Allowed(""), cov)
	}
	msg := fmt.Sprintf("claimguard: %s is deleted with Foreground propagation: it stays until its %s %s gone: %s. kubectl delete waits until then.",
		this, count(len(holders), "composed resource"), isAre(len(holders)), listed(holders, r.now()))
	return withUnchecked(admission.Allowed("").WithWarnings(msg), cov)
}
