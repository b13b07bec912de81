package claimguard

import (
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// claimCreate refuses a claim while a composite resource of a previous
// claim with the same namespace and name is still being deleted, or, when
// that XR is already gone (Background deletion), while resources it
// composed still are.
func (r *Rule) claimCreate(s *snapshot, req *rule.Request, x *xrd) admission.Response {
	c, bad := decode(req, roleComposite)
	if bad != nil {
		return *bad
	}
	key := c.asClaim()
	if key == "" {
		return admission.Allowed("the claim has no name yet")
	}
	w := s.composites[x.compositeGK()]
	if resp := usable(w, x.compositeGR().String()); resp != nil {
		return *resp
	}
	now := r.now()
	claim := named(x.claimKind, c.namespace(), c.name())
	if xrs := onlyDeleting(byIndex(w, indexClaim, key)); len(xrs) > 0 {
		sortFound(xrs)
		old := xrs[0]
		cov := &coverage{}
		holders := s.composed(w.gk, old.object, w.namespaced, cov)
		more := ""
		if len(xrs) > 1 {
			more = fmt.Sprintf(" (%s more composite %s of this claim %s deleting too)", strconv.Itoa(len(xrs)-1), plural(len(xrs)-1, "resource"), isAre(len(xrs)-1))
		}
		return admission.Denied(fmt.Sprintf(
			"claimguard: %s cannot be created yet: %s, the composite resource of the previous claim %s, has been deleting for %s and %s%s. "+
				"A new claim would compose new resources with the same external names while the old ones are still deleting theirs. "+
				"Retry once %s is gone (%s).",
			claim, old, key, old.deletingFor(now), heldBy(old, holders, now), more, old, kubectlGet(w.gvr.GroupResource(), old.namespace(), old.name())))
	}
	cov := &coverage{}
	prefix := ownerKey(x.compositeGK(), "")
	var left []found
	for _, f := range onlyDeleting(s.acrossKinds(indexClaim, key, cov)) {
		if strings.HasPrefix(f.owner, prefix) {
			left = append(left, f)
		}
	}
	if len(left) > 0 {
		sortFound(left)
		return admission.Denied(fmt.Sprintf(
			"claimguard: %s cannot be created yet: %s composed for the previous claim %s %s still being deleted: %s. "+
				"A new claim would compose new resources with the same external names while the old ones are still deleting theirs. "+
				"Retry once they are gone (kubectl get managed -l %s=%s,%s=%s).",
			claim, count(len(left), "resource"), key, isAre(len(left)), listed(left, now),
			labelClaimNamespace, c.namespace(), labelClaimName, c.name()))
	}
	return withUnchecked(admission.Allowed(""), cov)
}

// claimDelete warns when deleting a claim waits for its composed resources:
// with compositeDeletePolicy Foreground (on the claim, or the XRD's
// default) Crossplane deletes the XR with Foreground propagation and the
// claim stays until everything is gone.
func (r *Rule) claimDelete(s *snapshot, req *rule.Request, x *xrd) admission.Response {
	c, bad := decode(req, roleComposite)
	if bad != nil {
		return *bad
	}
	policy := c.compositeDeletePolicy
	if policy == "" {
		policy = x.defaultCompositeDeletePolicy
	}
	if policy != "Foreground" {
		return admission.Allowed("")
	}
	w := s.composites[x.compositeGK()]
	if resp := usable(w, x.compositeGR().String()); resp != nil {
		return *resp
	}
	xrs := byIndex(w, indexClaim, c.asClaim())
	if len(xrs) == 0 {
		return admission.Allowed("")
	}
	sortFound(xrs)
	now := r.now()
	cov := &coverage{}
	var waits []string
	for _, xr := range xrs {
		holders := s.composed(w.gk, xr.object, w.namespaced, cov)
		if len(holders) == 0 {
			waits = append(waits, xr.String())
			continue
		}
		waits = append(waits, fmt.Sprintf("%s, held by %s: %s", xr, count(len(holders), "composed resource"), listed(holders, now)))
	}
	msg := fmt.Sprintf("claimguard: %s is deleted with compositeDeletePolicy Foreground: it stays until these are gone: %s. "+
		"kubectl delete waits until then; follow progress with kubectl get managed -l %s=%s,%s=%s.",
		named(x.claimKind, c.namespace(), c.name()), strings.Join(waits, "; and "),
		labelClaimNamespace, c.namespace(), labelClaimName, c.name())
	return withUnchecked(admission.Allowed("").WithWarnings(msg), cov)
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// ownerName turns an owner key back into "Kind name" for messages.
func ownerName(key string) string {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 {
		return key
	}
	return parts[1] + " " + parts[2]
}
