// Package servedcache keeps informers for resources that a cluster may or
// may not serve. Rules that look up OLM or Flux objects cannot assume their
// CustomResourceDefinitions are installed: an informer on a resource that is
// not served fails to list forever, and waiting for it to sync would keep
// Steward unready on every cluster without OLM or Flux.
//
// A Set therefore asks discovery which of its resources are served, starts an
// informer for each of those, and keeps asking for the rest at an interval,
// starting each one when its CRD appears. Readiness waits for the informers
// that were served when Steward started, never for a missing one; a resource
// that appears later is looked up only once its informer has synced, and
// until then lookups report "not found", which every caller treats as "no
// information" (allow, leave untouched).
package servedcache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
)

// DefaultInterval is how often a Set asks discovery again for resources that
// were not served yet. Installing a CRD is rare; half a minute of delay before
// its objects are looked up costs nothing, and the requests are cheap.
const DefaultInterval = 30 * time.Second

// NewInformerFunc builds the informer for one served resource. It is called
// once per resource, with the version discovery prefers.
type NewInformerFunc func(gvr schema.GroupVersionResource) cache.SharedIndexInformer

// DiscoverFunc lists the served resources, one list per group version, in
// the version the server prefers for each resource. A partial answer with an
// error is used as far as it goes.
type DiscoverFunc func(ctx context.Context) ([]*metav1.APIResourceList, error)

// PreferredResources is the DiscoverFunc of a discovery client.
func PreferredResources(dc discovery.DiscoveryInterface) DiscoverFunc {
	return func(ctx context.Context) ([]*metav1.APIResourceList, error) {
		return discovery.ServerPreferredResourcesWithContext(ctx, discovery.ToDiscoveryInterfaceWithContext(dc))
	}
}

// Set is a group of informers, one per resource, each started once the API
// server serves its resource. It is a manager Runnable and provides a
// readiness check.
type Set struct {
	name        string
	resources   []schema.GroupResource
	discover    DiscoverFunc
	newInformer NewInformerFunc
	interval    time.Duration
	log         logr.Logger

	mu         sync.RWMutex
	informers  map[schema.GroupResource]cache.SharedIndexInformer
	atStart    []schema.GroupResource // served at the first discovery; readiness waits for these
	discovered bool
}

// New returns a Set for the given resources. name labels its log lines and
// readiness errors.
func New(name string, resources []schema.GroupResource, discover DiscoverFunc, newInformer NewInformerFunc, interval time.Duration, log logr.Logger) *Set {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Set{
		name:        name,
		resources:   slices.Clone(resources),
		discover:    discover,
		newInformer: newInformer,
		interval:    interval,
		log:         log.WithValues("cache", name),
		informers:   map[schema.GroupResource]cache.SharedIndexInformer{},
	}
}

// Start runs until ctx ends: it starts informers for the served resources and
// keeps looking for the others.
func (s *Set) Start(ctx context.Context) error {
	for {
		if err := s.startServed(ctx); err != nil {
			s.log.Info("discovery failed; retrying", "error", err.Error(), "retryIn", s.interval.String())
		}
		if s.complete() {
			<-ctx.Done()
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.interval):
		}
	}
}

// NeedLeaderElection is false: every replica answers admission requests, so
// every replica needs its own caches.
func (s *Set) NeedLeaderElection() bool { return false }

// startServed starts an informer for every resource discovery now reports
// as served that has none yet.
func (s *Set) startServed(ctx context.Context) error {
	lists, err := s.discover(ctx)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return fmt.Errorf("listing served resources: %w", err)
	}
	served := servedVersions(lists)
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.discovered
	s.discovered = true
	for _, gr := range s.resources {
		if _, ok := s.informers[gr]; ok {
			continue
		}
		version, ok := served[gr]
		if !ok {
			if first {
				s.log.Info("resource not served; will start its informer when it is", "resource", gr.String())
			}
			continue
		}
		inf := s.newInformer(gr.WithVersion(version))
		s.informers[gr] = inf
		if first {
			s.atStart = append(s.atStart, gr)
		}
		s.log.Info("starting informer", "resource", gr.WithVersion(version).String())
		go inf.Run(ctx.Done())
	}
	// A group that failed discovery is retried like a missing one; the
	// error is reported only when nothing at all could be listed.
	if err != nil && len(served) == 0 {
		return err
	}
	return nil
}

func servedVersions(lists []*metav1.APIResourceList) map[schema.GroupResource]string {
	served := map[schema.GroupResource]string{}
	for _, list := range lists {
		if list == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			served[schema.GroupResource{Group: gv.Group, Resource: r.Name}] = gv.Version
		}
	}
	return served
}

func (s *Set) complete() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.informers) == len(s.resources)
}

// Ready reports an error until discovery has answered once and every
// resource served at that time has synced. It never waits for a resource
// that is not served, so a cluster without the CRDs is ready at once.
func (s *Set) Ready(*http.Request) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.discovered {
		return fmt.Errorf("%s: waiting for API discovery", s.name)
	}
	var errs []error
	for _, gr := range s.atStart {
		if !s.informers[gr].HasSynced() {
			errs = append(errs, fmt.Errorf("%s: informer for %s has not synced", s.name, gr))
		}
	}
	return errors.Join(errs...)
}

// Get returns the stored object of a resource by namespace and name. It
// reports false when the object is absent, and also when the resource is
// not served or its informer has not synced yet: callers cannot tell those
// apart and need not.
func (s *Set) Get(gr schema.GroupResource, namespace, name string) (any, bool) {
	s.mu.RLock()
	inf, ok := s.informers[gr]
	s.mu.RUnlock()
	if !ok || !inf.HasSynced() {
		return nil, false
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, exists, err := inf.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil, false
	}
	return obj, true
}

// Watching reports whether an informer for the resource has started, for
// tests and diagnostics.
func (s *Set) Watching(gr schema.GroupResource) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.informers[gr]
	return ok
}
