package claimguard

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// role says what a watched kind is to Crossplane.
type role string

const (
	roleComposite role = "composite"
	roleManaged   role = "managed"
)

// watch is one informer cache over a composite or managed resource kind.
type watch struct {
	gk         schema.GroupKind
	gvr        schema.GroupVersionResource
	namespaced bool
	role       role
	indexer    cache.Indexer
	// owners finds the kind's objects by owner and claim, with every
	// other kind's.
	owners *ownerIndex
	// dropped is set, under owners.mu, once the watch stopped and left
	// owners.
	dropped bool
	// objects is how many objects the cache holds; a scrape lists
	// nothing.
	objects func() int
	// synced reports whether the informer has listed the kind once.
	synced func() bool
	// forbidden reports whether listing fails because Steward may not list
	// the kind; it is cleared when a list succeeds.
	forbidden func() bool
	// cancel stops the watch.
	cancel func()
}

// state is a watch's usability for a check.
type state int

const (
	stateSynced state = iota
	stateSyncing
	stateForbidden
)

func (w *watch) state() state {
	switch {
	case w.synced():
		return stateSynced
	case w.forbidden != nil && w.forbidden():
		return stateForbidden
	}
	return stateSyncing
}

// snapshot is claimguard's view of the cluster's Crossplane kinds at one
// point in time. It is replaced as a whole when XRDs or CRDs change, so a
// request reads one consistent view without locks.
type snapshot struct {
	// claims maps a claim kind to its XRD.
	claims map[schema.GroupKind]*xrd
	// xrds maps a composite kind to its XRD.
	xrds map[schema.GroupKind]*xrd
	// composites and managed are the watches by kind.
	composites map[schema.GroupKind]*watch
	managed    map[schema.GroupKind]*watch
	// providerKinds maps a provider kind (see providerKind) to the managed
	// resource watches serving it: its legacy cluster-scoped kind and its
	// namespaced ".m." kind, when both are served.
	providerKinds map[schema.GroupKind][]*watch
	// served are the resources the API server serves, for the webhook rules.
	served map[schema.GroupResource]bool
	// all lists every watch in a stable order, for lookups across kinds.
	all []*watch
	// ignoredXRDs counts the XRDs whose kinds are not Crossplane's to
	// compose (notComposable).
	ignoredXRDs int
}

func newSnapshot() *snapshot {
	return &snapshot{
		claims:     map[schema.GroupKind]*xrd{},
		xrds:       map[schema.GroupKind]*xrd{},
		composites: map[schema.GroupKind]*watch{},
		managed:    map[schema.GroupKind]*watch{},
		served:     map[schema.GroupResource]bool{},

		providerKinds: map[schema.GroupKind][]*watch{},
	}
}

// add registers a watch. all keeps the order of the adds: apply adds in
// the plan's order, which is sorted, so messages are stable.
func (s *snapshot) add(w *watch) {
	if w.role == roleComposite {
		s.composites[w.gk] = w
	} else {
		s.managed[w.gk] = w
		pk := providerKind(w.gk, w.namespaced)
		s.providerKinds[pk] = append(s.providerKinds[pk], w)
	}
	s.all = append(s.all, w)
}

// watchFor returns the watch of a kind, composite or managed.
func (s *snapshot) watchFor(gk schema.GroupKind) *watch {
	if w := s.composites[gk]; w != nil {
		return w
	}
	return s.managed[gk]
}
