package rule

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Rule is one Steward rule: an admission handler that knows how it is
// registered.
//
// Handle returns the rule's verdict as if the rule were enforced; modes,
// exemptions, break-glass, audit annotations, logs and metrics are applied
// around it by the serving layer (serving.Wrap), in one place for every
// rule. It reads the request's objects through req's Views (View,
// OldView), never by decoding them itself.
type Rule interface {
	Handle(ctx context.Context, req *Request) admission.Response
	Spec() Spec
}

// CacheScope is implemented by rules whose objects in the manager's shared
// cache are needed only in part, e.g. those carrying a label. The server
// passes the options to the cache when it creates the manager, so the API
// server never sends Steward the rest: no watch event, no memory.
type CacheScope interface {
	CacheByObject() map[client.Object]cache.ByObject
}

// MetricsCollector is implemented by rules with metrics of their own (the
// state of their caches). The server registers each rule's collector with
// the registry it serves /metrics from; nothing is registered globally, so
// two rules built in one process never share metrics.
type MetricsCollector interface {
	Collector() prometheus.Collector
}

// Inheritor is implemented by rules with state from the cluster
// (clustercache.ManagerSetup) that can take new settings while Steward runs. When the
// configuration file changes, the server builds the rule again from the
// new settings, never sets it up, and calls Inherit with the rule being
// served (of the same type, set up at start or itself an heir) before the
// new rule answers a request. The heir takes over the running rule's
// caches, loops and metrics, so only what its settings decide changes; the
// running rule keeps working until the server stops calling it.
type Inheritor interface {
	Inherit(running Rule) error
}
