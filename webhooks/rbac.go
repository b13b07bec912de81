package webhooks

import (
	"github.com/stewardhq/steward/webhooks/config"
	rbacv1 "k8s.io/api/rbac/v1"
)

// What every replica is granted whatever rules run, besides each rule's
// own permissions: the manifests grant it, and webhooks/setup compares it
// when a configuration is reloaded.

// ClusterCacheRBAC is what the cluster cache reads for every rule: CRD
// metadata, to notice kinds and versions being served or withdrawn.
func ClusterCacheRBAC() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"list", "watch"}},
	}
}

// EventsRBAC is what recording Events for refused writes needs
// (recordEventsFor): creating Events, and patching them to count a
// repeated refusal in the Event's series. Events are notes about objects,
// never the objects themselves; none is granted when c records none.
func EventsRBAC(c config.Config) []rbacv1.PolicyRule {
	if c.RecordEventsFor == config.EventsForNone {
		return nil
	}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}
