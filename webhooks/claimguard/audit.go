package claimguard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/rule"
)

// claimguard's audit checks.
const (
	CheckForegroundDeletion    = "foreground-deletion"
	CheckExternalNameCollision = "external-name-collision"
)

// Audit reports, from claimguard's caches alone (rule.Auditor):
//   - foreground-deletion (warn): composite resources deleting in
//     Foreground for longer than foregroundDeletionWarnAfter, with the
//     composed resources still holding them: their claims, and any claim
//     or XR re-created in their place, wait until they are gone;
//   - external-name-collision (fail): live managed resources of one
//     provider kind that share a crossplane.io/external-name, which is the
//     collision claimguard refuses at admission, reached some other way
//     (created before Steward, or while it was off).
//
// Claims themselves are not cached, so a claim waiting for its XR is
// reported through the XR, which names the claim.
func (r *Rule) Audit(_ context.Context, _ client.Reader) ([]rule.Finding, error) {
	s := r.found.snap.Load()
	if s == nil || !r.found.ready.Load() {
		return nil, errors.New("claimguard has not discovered and cached the cluster's Crossplane kinds yet")
	}
	for _, w := range s.all {
		if w.state() == stateSyncing {
			return nil, fmt.Errorf("the cache of %s has not synced yet", w.gvr.GroupResource())
		}
	}
	now := r.now()
	out := r.foregroundDeletions(s, now)
	return append(out, externalNameCollisions(s)...), nil
}

// listedAsDeleting names objects as denials do, an object being deleted
// as "being deleted" rather than for how long.
func listedAsDeleting(fs []found) string {
	return listedWith(fs, "; ", func(f found) string {
		return describeDeleting(f, func(found) string { return "being deleted" })
	})
}

// listNames names the first maxListed objects and counts the rest: the
// bounded form of a list in a finding's properties.
func listNames(fs []found) string {
	return listedWith(fs, ", ", found.String)
}

// reference is the finding's object: a cached object of watch w. It has
// no resource version, which changes with every status write: a report is
// written again whenever one of its results changes.
func reference(w *watch, o *object) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: w.gvr.GroupVersion().String(), Kind: w.gk.Kind,
		Namespace: o.namespace(), Name: o.name(),
	}
}

// foregroundDeletions warns about composite resources deleting in
// Foreground (the API server's foregroundDeletion finalizer) for longer
// than the configured threshold.
func (r *Rule) foregroundDeletions(s *snapshot, now time.Time) []rule.Finding {
	after := r.cfg.foregroundDeletionWarnAfter()
	var out []rule.Finding
	for _, w := range s.all {
		if w.role != roleComposite || w.state() != stateSynced {
			continue
		}
		var xrs []found
		for _, item := range w.indexer.List() {
			o, ok := item.(*object)
			if !ok || !o.deleting() || now.Sub(o.deletion.Time) < after || !slices.Contains(o.finalizers.list(), foregroundFinalizer) {
				continue
			}
			xrs = append(xrs, found{object: o, gk: w.gk})
		}
		sortFound(xrs)
		for _, xr := range xrs {
			out = append(out, r.foregroundFinding(s, w, xr))
		}
	}
	return out
}

func (r *Rule) foregroundFinding(s *snapshot, w *watch, xr found) rule.Finding {
	holders := s.composed(w.gk, xr.object, w.namespaced, &coverage{})
	this := named(w.gk.Kind, xr.namespace(), xr.name())
	waiting := "A claim or composite resource re-created in its place is refused until it is gone"
	if xr.claim() != "" {
		waiting = "Its claim " + xr.claim() + ", when deleted in Foreground, waits for it too, and a claim re-created in its place is refused until it is gone"
	}
	f := rule.Finding{
		Check:  CheckForegroundDeletion,
		Result: rule.AuditWarn,
		Object: reference(w, xr.object),
		// The message names no durations: a report is written again only
		// when a result changes, and the time a deletion has taken changes
		// every pass. deletingSince says when it began.
		Message: fmt.Sprintf("claimguard: %s has been deleting with Foreground propagation for more than %s and %s. %s (%s).",
			this, r.cfg.foregroundDeletionWarnAfter(), heldByListed(xr, holders, listedAsDeleting), waiting, kubectlGet(w.gvr.GroupResource(), xr.namespace(), xr.name())),
		Properties: map[string]string{"deletingSince": xr.deletion.UTC().Format(time.RFC3339)},
	}
	if len(holders) > 0 {
		f.Properties["blockedBy"] = listNames(holders)
	} else if xr.finalizers.any() {
		f.Properties["blockedBy"] = "finalizers " + xr.finalizers.String()
	}
	if xr.claim() != "" {
		f.Properties["claim"] = xr.claim()
	}
	return f
}

// liveMR is one live managed resource with an external name, and its watch.
type liveMR struct {
	w *watch
	o *object
}

// externalNameCollisions fails every live managed resource that shares its
// external name with another live one that admission would have refused
// next to it: of the same provider kind (sameExternalResources: its own
// kind, and the legacy or namespaced group of the same provider kind). It
// sorts pointers to the cached objects rather than building an index of
// every external name, so a pass costs a slice, not a map of strings.
func externalNameCollisions(s *snapshot) []rule.Finding {
	kinds := make([]schema.GroupKind, 0, len(s.providerKinds))
	for pk := range s.providerKinds {
		kinds = append(kinds, pk)
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].String() < kinds[j].String() })
	var out []rule.Finding
	for _, pk := range kinds {
		var live []liveMR
		for _, w := range s.providerKinds[pk] {
			if w.state() != stateSynced {
				continue
			}
			for _, item := range w.indexer.List() {
				if o, ok := item.(*object); ok && !o.deleting() && o.externalName() != "" {
					live = append(live, liveMR{w: w, o: o})
				}
			}
		}
		sort.Slice(live, func(i, j int) bool {
			a, b := live[i], live[j]
			if a.o.externalName() != b.o.externalName() {
				return a.o.externalName() < b.o.externalName()
			}
			if a.w.gk != b.w.gk {
				return a.w.gk.String() < b.w.gk.String()
			}
			return a.o.key() < b.o.key()
		})
		for start := 0; start < len(live); {
			end := start + 1
			for end < len(live) && live[end].o.externalName() == live[start].o.externalName() {
				end++
			}
			if end-start > 1 {
				out = append(out, collisionFindings(s, live[start:end])...)
			}
			start = end
		}
	}
	return out
}

// collisionFindings reports each resource of a group sharing one external
// name that collides with at least one other of the group.
func collisionFindings(s *snapshot, group []liveMR) []rule.Finding {
	var out []rule.Finding
	for _, e := range group {
		var others []found
		for _, o := range group {
			if o == e || !slices.Contains(s.sameExternalResources(e.w), o.w) {
				continue
			}
			others = append(others, found{object: o.o, gk: o.w.gk})
		}
		if len(others) == 0 {
			continue
		}
		names := make([]string, 0, len(others))
		for _, o := range others {
			n := o.String()
			if o.gk.Group != e.w.gk.Group {
				n += " in " + o.gk.Group
			}
			names = append(names, n)
		}
		shown := names
		more := ""
		if len(names) > maxListed {
			shown, more = names[:maxListed], fmt.Sprintf(" and %d more", len(names)-maxListed)
		}
		this := named(e.w.gk.Kind, e.o.namespace(), e.o.name())
		out = append(out, rule.Finding{
			Check:  CheckExternalNameCollision,
			Result: rule.AuditFail,
			Object: reference(e.w, e.o),
			Message: fmt.Sprintf("claimguard: %s has external name %q, as %s%s %s: they manage the same external resource, each reconciling it toward its own spec, "+
				"and deleting one deletes it from under the others. Keep one; delete the others with spec.deletionPolicy Orphan (or managementPolicies without Delete) so the external resource stays.",
				this, e.o.externalName(), strings.Join(shown, ", "), more, doDoes(len(names))),
			Properties: map[string]string{
				"externalName": e.o.externalName(),
				"others":       strings.Join(shown, ", ") + more,
			},
		})
	}
	return out
}

func doDoes(n int) string {
	if n == 1 {
		return "does"
	}
	return "do"
}

var _ rule.Auditor = (*Rule)(nil)
