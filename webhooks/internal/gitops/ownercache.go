package gitops

import "k8s.io/apimachinery/pkg/runtime/schema"

// OwnerCache is where a resolver reads the owners it caches: the cluster
// cache's Set once the rule is set up, a fake in tests.
type OwnerCache interface {
	Lookup(gr schema.GroupResource, namespace, name string) (any, bool, error)
	List(gr schema.GroupResource) ([]any, error)
}

// NoOwners is the cache of a rule not set up: no owner exists.
type NoOwners struct{}

// Lookup finds nothing.
func (NoOwners) Lookup(schema.GroupResource, string, string) (any, bool, error) {
	return nil, false, nil
}

// List lists nothing.
func (NoOwners) List(schema.GroupResource) ([]any, error) { return nil, nil }
