package setup

import (
	"maps"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/rule"
)

// CacheOptions are the manager cache's options for serve and audit alike:
// the rules' scopes, and informers that list in pages of transformed
// objects, never a whole list of untransformed ones (NewInformer).
func CacheOptions(rules []webhooks.Configured) cache.Options {
	return cache.Options{ByObject: cacheScopes(rules), NewInformer: NewInformer}
}

// cacheScopes gathers the rules' narrowing of the manager's shared cache.
func cacheScopes(rules []webhooks.Configured) map[client.Object]cache.ByObject {
	out := map[client.Object]cache.ByObject{}
	for _, c := range rules {
		if s, ok := c.Rule.(rule.CacheScope); ok {
			maps.Copy(out, s.CacheByObject())
		}
	}
	return out
}
