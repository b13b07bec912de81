package claimguard

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// watchedKinds shows how many kinds claimguard caches, by role and state,
// so an alert can fire on kinds it cannot list (state "forbidden") or that
// never sync; requests for those are allowed with a warning or refused.
var watchedKinds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "steward_claimguard_watched_kinds",
	Help: "Kinds claimguard caches, by role (composite, managed) and state (synced, syncing, forbidden).",
}, []string{"role", "state"})

// cachedObjects counts the objects in claimguard's caches, by role.
var cachedObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "steward_claimguard_cached_objects",
	Help: "Objects in claimguard's caches, by role (composite, managed).",
}, []string{"role"})

func init() {
	metrics.Registry.MustRegister(watchedKinds, cachedObjects)
}

var stateNames = map[state]string{stateSynced: "synced", stateSyncing: "syncing", stateForbidden: "forbidden"}

// observe records a snapshot's kinds and cache sizes.
func observe(s *snapshot) {
	counts := map[[2]string]int{}
	objects := map[role]int{}
	for _, w := range s.all {
		counts[[2]string{string(w.role), stateNames[w.state()]}]++
		objects[w.role] += len(w.indexer.ListKeys())
	}
	for _, r := range []role{roleComposite, roleManaged} {
		for _, st := range stateNames {
			watchedKinds.WithLabelValues(string(r), st).Set(float64(counts[[2]string{string(r), st}]))
		}
		cachedObjects.WithLabelValues(string(r)).Set(float64(objects[r]))
	}
}
