package claimguard

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Crossplane v2 providers serve each managed resource kind twice: in its
// legacy cluster-scoped group (postgresql.sql.crossplane.io,
// rds.aws.upbound.io) and namespaced, in the same group with an "m" label
// before the provider's domain (postgresql.sql.m.crossplane.io,
// rds.aws.m.upbound.io). The same provider reconciles both against the
// same external systems, so an external name means the same external
// resource in either group: migrating from one to the other re-creates an
// MR with the external name of one that may still be deleting it.

// legacyGroup returns the legacy group of a ".m." group: the group without
// its last "m" label, which must have a label on each side.
func legacyGroup(group string) (string, bool) {
	labels := strings.Split(group, ".")
	for i := len(labels) - 2; i > 0; i-- {
		if labels[i] == "m" {
			return strings.Join(append(labels[:i:i], labels[i+1:]...), "."), true
		}
	}
	return "", false
}

// providerKind names the provider kind a managed resource kind serves: its
// own GroupKind for a cluster-scoped kind, the legacy GroupKind for a
// namespaced kind of a ".m." group. The legacy and the namespaced kind of
// one provider kind share it.
func providerKind(gk schema.GroupKind, namespaced bool) schema.GroupKind {
	if namespaced {
		if g, ok := legacyGroup(gk.Group); ok {
			return schema.GroupKind{Group: g, Kind: gk.Kind}
		}
	}
	return gk
}

// sameExternalResources returns the managed resource watches whose objects
// name external resources as w's do: w itself and, for a provider kind
// served in both its legacy cluster-scoped group and its namespaced ".m."
// group, the other one. Two namespaced or two cluster-scoped kinds are
// never paired: Crossplane's convention puts only namespaced kinds in
// ".m." groups.
func (s *snapshot) sameExternalResources(w *watch) []*watch {
	out := []*watch{w}
	for _, other := range s.providerKinds[providerKind(w.gk, w.namespaced)] {
		if other != w && other.namespaced != w.namespaced {
			out = append(out, other)
		}
	}
	return out
}
