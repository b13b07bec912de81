package gitops

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

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

// Caches are what the resolver of a tool that records what it manages
// (Flux's owners, Argo CD's Applications) reads besides the request: the
// records, cached, and the workloads a scale request names, from the API
// server. Both are set up once with the manager, and a rule that a
// configuration reload builds takes them over from the running one
// (Inherit) instead of starting informers again.
type Caches struct {
	// Cache holds the records, trimmed by the guard's transforms
	// (Keep); NoOwners until the rule is set up.
	Cache OwnerCache
	APIWorkloads
}

// NewCaches are the caches of a rule not set up yet.
func NewCaches() Caches { return Caches{Cache: NoOwners{}} }

// SetUp caches kinds, each once its CRD is served, for the rule named
// ruleName, and gates readiness on their sync under the check
// "<ruleName>-<check>".
func (c *Caches) SetUp(mgr manager.Manager, cluster *clustercache.Cache, ruleName, check string, kinds map[schema.GroupResource]clustercache.Spec) error {
	set := cluster.Follow(ruleName, kinds)
	c.Cache = set
	c.Reader = mgr.GetAPIReader()
	return mgr.AddReadyzCheck(ruleName+"-"+check, set.Ready)
}

// IsSetUp reports whether SetUp, or a test's own cache, gave the records.
func (c *Caches) IsSetUp() bool {
	_, none := c.Cache.(NoOwners)
	return !none
}

// Collector reports the records' informers as
// steward_watched_kinds{rule=...}. A rule that was never set up reports
// nothing; an heir keeps the running rule's cache.
func (c *Caches) Collector() prometheus.Collector {
	set, _ := c.Cache.(*clustercache.Set)
	return set.Collector()
}

// Inherit hands the rule a configuration reload built what running, the
// rule it replaces, set up: take copies it from running, which must be a
// rule of the same kind, R.
func Inherit[R rule.Rule](ruleName string, running rule.Rule, take func(old R)) error {
	old, ok := running.(R)
	if !ok {
		return fmt.Errorf("%s cannot take over from a %T", ruleName, running)
	}
	take(old)
	return nil
}

// Keep is the informer transform of a kind a guard caches as P, which
// trim builds from the object the API server sends. It accepts its own
// output, as informers require.
func Keep[P runtime.Object](ruleName string, trim func(*unstructured.Unstructured) P) func(any) (any, error) {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case P:
			return o, nil
		case *unstructured.Unstructured:
			return trim(o), nil
		}
		return nil, fmt.Errorf("%s cache: unexpected object type %T", ruleName, obj)
	}
}

// Lookup finds the object of gr named namespace/name in c, as the
// guard's transform kept it, P.
func Lookup[P any](c OwnerCache, gr schema.GroupResource, namespace, name string) (P, bool, error) {
	obj, found, err := c.Lookup(gr, namespace, name)
	p, ok := obj.(P)
	return p, found && ok, err
}
