package clustercache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Set caches a fixed list of resources that the cluster may or may not
// serve: OLM's or Flux's, whose CRDs may not be installed. An informer on
// a resource that is not served fails to list forever, and waiting for it
// would keep Steward unready on every cluster without them, so each
// informer starts once its resource is served, at the version the server
// prefers, and moves when an upgrade changes that version.
//
// Readiness waits for the resources served at the first discovery, never
// for one that is missing, and only for their first sync (see Ready). A
// resource that appears later is looked up only once its informer has
// synced; until then lookups report "not found", which every caller
// treats as "no information" (allow, leave untouched). What each informer
// is doing now is the metric steward_watched_kinds (Collector).
type Set struct {
	name  string
	specs map[schema.GroupResource]Spec
	log   logr.Logger

	mu         sync.RWMutex
	discovered bool
	// atStart are the informers started at the first discovery, which
	// readiness waits for.
	atStart map[schema.GroupResource]*Watch
	// current answers lookups; next, while an upgrade changed the
	// preferred version, is the informer that replaces it once synced.
	current map[schema.GroupResource]*Watch
	next    map[schema.GroupResource]*Watch
	// start is Cache.Watch.
	start func(context.Context, schema.GroupVersionResource, Spec) *Watch
}

// Follow returns a Set over the given resources, each cached as its Spec
// says. name labels its log lines and readiness errors. The Cache starts
// the informers once it runs.
func (c *Cache) Follow(name string, specs map[schema.GroupResource]Spec) *Set {
	s := &Set{
		name:    name,
		specs:   specs,
		log:     c.log.WithValues("cache", name),
		atStart: map[schema.GroupResource]*Watch{},
		current: map[schema.GroupResource]*Watch{},
		next:    map[schema.GroupResource]*Watch{},
	}
	s.start = c.Watch
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sets = append(c.sets, s)
	return s
}

// update moves the informers to what discovery now serves: it starts the
// missing ones, replaces those whose preferred version changed, and stops
// those no longer served (unless discovery was partial).
func (s *Set) update(ctx context.Context, served *Served) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.discovered
	s.discovered = true
	for gr, spec := range s.specs {
		cur := s.current[gr]
		r := served.Resources[gr]
		switch {
		case r == nil && served.Partial:
			// Its group may have failed discovery: keep what runs.
		case r == nil:
			if first {
				s.log.Info("resource not served; will start its informer when it is", "resource", gr.String())
			}
			if cur != nil {
				s.log.Info("resource no longer served; stopping its informer", "resource", cur.GVR().String())
			}
			s.stop(gr)
		case cur == nil:
			gvr := r.GVR("")
			s.log.Info("starting informer", "resource", gvr.String())
			s.current[gr] = s.start(ctx, gvr, spec)
			if first {
				s.atStart[gr] = s.current[gr]
			}
		case cur.GVR().Version != r.Preferred():
			if n := s.next[gr]; n != nil && n.GVR().Version == r.Preferred() {
				continue
			}
			s.moveTo(ctx, gr, r.GVR(""), spec)
		case s.next[gr] != nil:
			// The preferred version went back before the move finished.
			s.next[gr].Stop()
			delete(s.next, gr)
		}
	}
}

// moveTo starts the informer that replaces the one answering for gr; the
// old one answers until the new one has synced, so lookups never find
// nothing because of an upgrade. Called with s.mu held.
func (s *Set) moveTo(ctx context.Context, gr schema.GroupResource, gvr schema.GroupVersionResource, spec Spec) {
	if n := s.next[gr]; n != nil {
		n.Stop()
	}
	s.log.Info("the served version changed; moving the informer", "from", s.current[gr].GVR().String(), "to", gvr.String())
	// The replacement is read under s.mu, which is held until it is set.
	replacement := new(*Watch)
	synced := spec.OnSynced
	spec.OnSynced = func() {
		s.promote(gr, replacement)
		if synced != nil {
			synced()
		}
	}
	*replacement = s.start(ctx, gvr, spec)
	s.next[gr] = *replacement
}

// promote makes a synced replacement the informer that answers, and stops
// the one it replaces.
func (s *Set) promote(gr schema.GroupResource, replacement **Watch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := *replacement
	if n == nil || s.next[gr] != n {
		return // replaced or stopped meanwhile
	}
	s.current[gr].Stop()
	s.current[gr] = n
	delete(s.next, gr)
	s.log.Info("informer moved", "resource", n.GVR().String())
}

func (s *Set) stop(gr schema.GroupResource) {
	for _, m := range []map[schema.GroupResource]*Watch{s.current, s.next} {
		if w := m[gr]; w != nil {
			w.Stop()
			delete(m, gr)
		}
	}
}

// readyWithin bounds how long one resource whose list keeps failing (for
// a reason other than RBAC) holds readiness back at start-up, as in
// claimguard: one broken CRD must not keep every replica unready.
const readyWithin = time.Minute

// Ready reports an error until discovery has answered once and every
// resource served at that time has synced, is forbidden to Steward, or
// has kept failing for readyWithin. It never waits for a resource that is
// not served, so a cluster without the CRDs is ready at once, nor for an
// informer started later (a CRD installed, or deleted and installed
// again). Readiness is about start-up only: a resource that later loses
// its permission, stops being served or keeps failing does not make a
// replica unready, since an unready replica answers no webhook at all;
// steward_watched_kinds and the StewardWatchedKindNotSyncing alert say so
// instead.
func (s *Set) Ready(*http.Request) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.discovered {
		return fmt.Errorf("%s: waiting for API discovery", s.name)
	}
	var errs []error
	for gr, w := range s.atStart {
		if s.current[gr] != w || w.HasSynced() || w.Forbidden() {
			continue
		}
		if time.Since(w.started) > readyWithin {
			continue
		}
		errs = append(errs, fmt.Errorf("%s: informer for %s has not synced", s.name, gr))
	}
	return errors.Join(errs...)
}

// Watched is what each informer is doing now, by resource and version,
// for the metric and tests: the one answering lookups and, while an
// upgrade moves it, its replacement, so a version the cluster prefers but
// cannot list shows (syncing or forbidden) although the old one answers.
func (s *Set) Watched() map[schema.GroupVersionResource]State {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[schema.GroupVersionResource]State, len(s.current)+len(s.next))
	for _, m := range []map[schema.GroupResource]*Watch{s.current, s.next} {
		for _, w := range m {
			out[w.GVR()] = w.State()
		}
	}
	return out
}

// Get returns the stored object of a resource by namespace and name. It
// reports false when the object is absent, and also when the resource is
// not served or its informer has not synced yet: callers cannot tell those
// apart and need not.
func (s *Set) Get(gr schema.GroupResource, namespace, name string) (any, bool) {
	s.mu.RLock()
	w := s.current[gr]
	s.mu.RUnlock()
	if w == nil {
		return nil, false
	}
	return w.Get(namespace, name)
}

// Lookup is Get for a rule that must not guess: it reports an error while
// it cannot tell whether the object exists (discovery has not answered,
// or the informer answering for the resource has not synced or may not
// list it). A resource that is not served has no objects, and no error:
// the tool it belongs to is not installed.
func (s *Set) Lookup(gr schema.GroupResource, namespace, name string) (any, bool, error) {
	w, err := s.answering(gr)
	if w == nil {
		return nil, false, err
	}
	obj, ok := w.Get(namespace, name)
	return obj, ok, nil
}

// answering returns the synced informer that answers for a resource: nil
// and no error when the resource is not served, and an error while it
// cannot answer yet.
func (s *Set) answering(gr schema.GroupResource) (*Watch, error) {
	s.mu.RLock()
	discovered, w := s.discovered, s.current[gr]
	s.mu.RUnlock()
	switch {
	case !discovered:
		return nil, fmt.Errorf("%s: waiting for API discovery", s.name)
	case w == nil:
		return nil, nil
	case w.Forbidden():
		return nil, fmt.Errorf("%s: Steward may not list %s", s.name, w.GVR())
	case !w.HasSynced():
		return nil, fmt.Errorf("%s: informer for %s has not synced", s.name, w.GVR())
	}
	return w, nil
}

// Watching returns the version whose informer answers for the resource, or
// "" when none does, for tests and diagnostics.
func (s *Set) Watching(gr schema.GroupResource) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if w := s.current[gr]; w != nil {
		return w.GVR().Version
	}
	return ""
}

// Followed names the Sets a rule made with Follow, for the test that
// every such rule reports its kinds.
func (c *Cache) Followed() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.sets))
	for _, s := range c.sets {
		out = append(out, s.name)
	}
	return out
}

// List returns every stored object of a resource, for a rule's audit,
// which must tell "none" from "not known yet". It reports an error until
// discovery has answered once, and while the informer answering for the
// resource has not synced or may not list it; a resource that is not
// served has no objects, and no error.
func (s *Set) List(gr schema.GroupResource) ([]any, error) {
	w, err := s.answering(gr)
	if w == nil {
		return nil, err
	}
	return w.Indexer().List(), nil
}
