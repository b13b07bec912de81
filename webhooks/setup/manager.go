package setup

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/internal/clustercache"
)

// WithManager sets up every rule that needs informer caches, handing each
// the one clustercache.Cache, built here from the manager's config and
// HTTP client and run by the manager: one discovery loop and one set of
// clients for every rule, whatever the number of rules.
func WithManager(mgr manager.Manager, rules []webhooks.Configured) error {
	_, err := WithManagerCache(mgr, rules)
	return err
}

// WithManagerCache is WithManager, and returns the cluster cache, for the
// registration keeper (rulessync.Options.Cache), which watches through it.
func WithManagerCache(mgr manager.Manager, rules []webhooks.Configured) (*clustercache.Cache, error) {
	cluster, err := clustercache.New(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetLogger().WithName("cluster-cache"))
	if err != nil {
		return nil, fmt.Errorf("cluster cache: %w", err)
	}
	if err := mgr.Add(cluster); err != nil {
		return nil, fmt.Errorf("adding the cluster cache to the manager: %w", err)
	}
	for _, c := range rules {
		if s, ok := c.Rule.(clustercache.ManagerSetup); ok {
			if err := s.SetupWithManager(mgr, cluster); err != nil {
				return nil, fmt.Errorf("setting up rule %s: %w", c.Rule.Spec().Name, err)
			}
		}
	}
	return cluster, nil
}

// ListsInFlight is how many lists Steward's informers are reading now
// (clustercache.ListsInFlight).
func ListsInFlight() int64 { return clustercache.ListsInFlight() }

// NewInformer builds the manager cache's informers (cache.Options.NewInformer):
// like the cluster cache's, they list in pages and transform each page
// before asking for the next, so no informer holds a whole list of
// untransformed objects at start-up.
//
// They keep no namespace index, which controller-runtime asks every
// informer for: it would hold an entry per cached object (fleetguard's
// workloads), and nothing reads the manager cache by namespace (its
// readers list every namespace and get by key). A List in one namespace
// fails saying the index does not exist (TestManagerCacheKeepsNoNamespaceIndex).
func NewInformer(lw toolscache.ListerWatcher, example runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	kept := toolscache.Indexers{}
	for name, f := range indexers {
		if name != toolscache.NamespaceIndex {
			kept[name] = f
		}
	}
	return clustercache.NewPagedInformer(lw, example, resync, kept)
}
