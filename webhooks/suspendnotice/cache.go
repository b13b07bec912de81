package suspendnotice

import (
	"fmt"
	"unique"

	"github.com/prometheus/client_golang/prometheus"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

// SetupWithManager caches the Flux kinds' metadata, from which the event
// webhook learns whether an object is suspended (the steward.dev/suspended-at
// annotation). Each kind is cached once its CRD is served, at the version
// the server prefers, following Flux upgrades: Flux may not be installed,
// or only some of its controllers. The kinds served at start-up gate
// readiness; a kind whose CRD appears later is looked up once its informer
// has synced, and until then its events pass untouched.
func (r *Rule) SetupWithManager(mgr manager.Manager, cluster *clustercache.Cache) error {
	specs := make(map[schema.GroupResource]clustercache.Spec, len(fluxKinds))
	for _, k := range fluxKinds {
		specs[k.groupResource()] = clustercache.Spec{Metadata: true, Transform: keepSuspension}
	}
	set := cluster.Follow(Name, specs)
	r.suspensions = suspensions{set}
	return mgr.AddReadyzCheck(Name+"-flux-objects", set.Ready)
}

// suspensions looks the record up in the cache.
type suspensions struct{ set *clustercache.Set }

func (s suspensions) Suspended(gr schema.GroupResource, namespace, name string) bool {
	obj, ok := s.set.Get(gr, namespace, name)
	if !ok {
		return false
	}
	c, ok := obj.(*cachedFlux)
	return ok && c.suspended()
}

// keepSuspension keeps an object's identity and, on a suspended object
// (one with the suspended-at annotation), the suspension record (both
// annotations, which the audit reports), as a cachedFlux: not its labels,
// other annotations (a last-applied-configuration can be large) or
// managedFields. It is idempotent, as informers require.
func keepSuspension(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &cachedFlux{
		namespace:       unique.Make(m.Namespace),
		name:            m.Name,
		uid:             m.UID,
		resourceVersion: m.ResourceVersion,
		suspension:      suspensionOf(m.Annotations),
	}, nil
}

// Inherit makes r look suspensions up in the cache running was set up
// with; everything else is r's own settings.
func (r *Rule) Inherit(running rule.Rule) error {
	old, ok := running.(*Rule)
	if !ok {
		return fmt.Errorf("suspendnotice cannot take over from a %T", running)
	}
	r.suspensions = old.suspensions
	return nil
}

// Collector reports the informers over the Flux kinds as
// steward_watched_kinds{rule="suspendnotice",...}; the server
// registers it with the registry it serves. A rule that was never set up
// reports nothing; an heir keeps the running rule's cache, which the
// collector registered at start-up goes on reading.
func (r *Rule) Collector() prometheus.Collector {
	var set *clustercache.Set
	if c, ok := r.suspensions.(suspensions); ok {
		set = c.set
	}
	return set.Collector()
}

var _ rule.MetricsCollector = (*Rule)(nil)
