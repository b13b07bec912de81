package clustercache

import "sigs.k8s.io/controller-runtime/pkg/manager"

// ManagerSetup is implemented by rules that need informer caches. The
// server calls it before the manager starts, so the caches sync before
// Steward reports ready. Rules rendered for manifests are never set up.
//
// Kinds that are built in and always served can use the manager's cache;
// kinds a cluster may not serve, or serves at versions that change with
// upgrades, come from the one shared Cache (see the package comment for
// why the manager's cache cannot hold them). The interface lives here,
// not in the rule contract, so that the contract names no cache.
type ManagerSetup interface {
	SetupWithManager(mgr manager.Manager, cluster *Cache) error
}
