package claimguard

import (
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/stewardhq/steward/webhooks/rule"
)

// dynamicRules makes the rules of the create (or delete) entry follow the
// cluster's XRDs: Steward's rulessync.Syncer applies webhookRules of the
// current snapshot to the live entry once the first discovery ran and its
// caches synced, and again on every new snapshot. nil when the
// configuration leaves the rules to something else.
func (r *Rule) dynamicRules(op admissionregistrationv1.OperationType) *rule.DynamicRules {
	if !r.cfg.manageRules() {
		return nil
	}
	return &rule.DynamicRules{
		Configuration: r.cfg.WebhookConfigurationName,
		Guards:        "claim and composite resource kinds",
		Current: func() ([]admissionregistrationv1.RuleWithOperations, bool) {
			s := r.found.snap.Load()
			if !r.found.ready.Load() || s == nil {
				return nil, false
			}
			return webhookRules(s, op), true
		},
		Changed: r.found.rulesChanged,
	}
}

// webhookRules returns the rules the create and delete entries should have
// for the current snapshot: every served claim and composite resource of
// each XRD whose composite cache has synced. A kind joins the rules only
// once claimguard can answer for it, so a new XRD never sends requests to
// an unsynced cache; kinds Steward may not list stay out (and are logged).
func webhookRules(s *snapshot, op admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	if s == nil {
		return nil
	}
	byGroup := map[string][]string{}
	for gk, x := range s.xrds {
		w := s.composites[gk]
		if w == nil || w.state() != stateSynced {
			continue
		}
		if s.served[x.compositeGR()] {
			byGroup[x.group] = append(byGroup[x.group], x.compositePlural)
		}
		if x.claimKind != "" && s.served[x.claimGR()] {
			byGroup[x.group] = append(byGroup[x.group], x.claimPlural)
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var out []admissionregistrationv1.RuleWithOperations
	scope := admissionregistrationv1.AllScopes
	for _, g := range groups {
		res := byGroup[g]
		sort.Strings(res)
		out = append(out, admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{op},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{g},
				APIVersions: []string{"*"},
				Resources:   res,
				Scope:       &scope,
			},
		})
	}
	return out
}
