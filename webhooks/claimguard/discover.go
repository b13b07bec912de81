package claimguard

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
)

// Timings of the planning loop. Discovery itself, and asking it again when
// CRDs change, is the cluster cache's.
const (
	// debounce gathers a burst of XRD events and syncs into one plan.
	debounce = 200 * time.Millisecond
	// retryAfter is how soon readiness is checked again while caches sync.
	retryAfter = 2 * time.Second
	// listedKeysFor bounds how long the first lists' owner keys are kept
	// (listedKeys) when a kind never syncs.
	listedKeysFor = 10 * time.Minute
	// resyncEvery is the safety net when nothing changes.
	resyncEvery = 5 * time.Minute
	// readyWithin bounds how long one kind whose cache cannot sync (for a
	// reason other than RBAC) holds back readiness at start-up; requests for
	// that kind are answered with an error until it syncs.
	readyWithin = time.Minute
)

// discoverer keeps claimguard's snapshot in step with the cluster: from
// each discovery answer of the cluster cache and the XRDs it decides which
// composite and managed kinds to cache, and starts and stops one watch per
// kind in the cluster cache.
type discoverer struct {
	rule    *Rule
	log     logr.Logger
	cluster *clustercache.Cache
	// discovered hears of every discovery answer.
	discovered <-chan struct{}

	kick chan struct{}

	xrds *clustercache.Watch

	mu      sync.Mutex
	watches map[schema.GroupVersionResource]*watch
	// watched are the kinds the last plan watches, set before its
	// watches start: composites drop their references to these kinds
	// (compositeTransform).
	watched atomic.Pointer[map[schema.GroupKind]bool]
	// ignored are the XRDs last found not composable, with the reason.
	ignored map[string]string
	// listed shares owner keys while the first lists arrive.
	listed *listedKeys
}

func newDiscoverer(r *Rule, cluster *clustercache.Cache) *discoverer {
	return &discoverer{rule: r, log: r.log.WithName("discovery"), cluster: cluster, discovered: cluster.Subscribe(), kick: make(chan struct{}, 1), listed: newListedKeys()}
}

// NeedLeaderElection is false: every replica needs the caches to answer.
func (d *discoverer) NeedLeaderElection() bool { return false }

func (d *discoverer) trigger() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

func (d *discoverer) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { d.trigger() },
		UpdateFunc: func(any, any) { d.trigger() },
		DeleteFunc: func(any) { d.trigger() },
	}
}

// Start runs the planning loop until ctx ends, then stops every watch.
func (d *discoverer) Start(ctx context.Context) error {
	d.watches = map[schema.GroupVersionResource]*watch{}
	started := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			d.stopAll()
			return nil
		case <-d.kick:
			time.Sleep(debounce)
			select {
			case <-d.kick:
			default:
			}
		case <-d.discovered:
		case <-timer.C:
		}
		d.resync(ctx)
		next := resyncEvery
		pending := d.pending()
		if !d.rule.found.ready.Load() {
			if len(pending) == 0 {
				d.rule.found.ready.Store(true)
				d.log.Info("caches synced; ready")
			} else if time.Since(started) > readyWithin {
				d.rule.found.ready.Store(true)
				d.log.Info("ready although some caches have not synced; requests for these kinds are refused until they do", "kinds", pending)
			} else {
				next = retryAfter
			}
		}
		if d.listed.sharing() {
			if len(pending) == 0 || time.Since(started) > listedKeysFor {
				d.listed.done()
			} else {
				next = retryAfter
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// pending lists the kinds whose caches are still syncing.
func (d *discoverer) pending() []string {
	var out []string
	if d.xrds != nil && !d.xrds.HasSynced() && !d.xrds.Forbidden() {
		out = append(out, xrdGroupResource.String())
	}
	if s := d.rule.found.snap.Load(); s != nil {
		for _, w := range s.all {
			if w.state() == stateSyncing {
				out = append(out, w.gvr.GroupResource().String())
			}
		}
	} else {
		out = append(out, "discovery")
	}
	return out
}

// resync brings the snapshot up to date with the latest discovery answer
// and XRDs; before the first answer there is nothing to plan from.
func (d *discoverer) resync(ctx context.Context) {
	served := d.cluster.Served()
	if served == nil {
		return
	}
	d.ensureXRDInformer(ctx, served.Resources)
	var xrds []*xrd
	if d.xrds != nil {
		for _, item := range d.xrds.Indexer().List() {
			u, ok := item.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			x, err := parseXRD(u)
			if err != nil {
				d.log.Info("ignoring CompositeResourceDefinition", "reason", err.Error())
				continue
			}
			xrds = append(xrds, x)
		}
	}
	p := makePlan(served.Resources, xrds, served.CRDs)
	d.warnIgnored(p.ignored)
	d.apply(ctx, p, served.Partial)
}

// warnIgnored logs each ignored XRD once for each reason.
func (d *discoverer) warnIgnored(ignored map[string]string) {
	for name, why := range ignored {
		if d.ignored[name] != why {
			d.log.Info("WARNING: ignoring a CompositeResourceDefinition whose kinds are not Crossplane's to compose; claimguard will not register or guard them",
				"xrd", name, "reason", why)
		}
	}
	d.ignored = ignored
}

// ensureXRDInformer watches XRDs once they are served, at the most
// preferred version claimguard reads, and waits for their first list.
func (d *discoverer) ensureXRDInformer(ctx context.Context, resources map[schema.GroupResource]*clustercache.Resource) {
	a := resources[xrdGroupResource]
	var want schema.GroupVersionResource
	if a != nil {
		for _, v := range xrdVersions {
			if slices.Contains(a.Versions, v) {
				want = xrdGroupResource.WithVersion(v)
				break
			}
		}
	}
	var have schema.GroupVersionResource
	if d.xrds != nil {
		have = d.xrds.GVR()
	}
	if want == have {
		return
	}
	if d.xrds != nil {
		d.xrds.Stop()
		d.xrds = nil
	}
	if want.Empty() {
		return
	}
	w := d.cluster.Watch(ctx, want, clustercache.Spec{
		Transform:   trimXRD,
		Handler:     d.handler(),
		OnForbidden: d.onForbidden(xrdGroupResource.String()),
	})
	d.xrds = w
	wctx, done := context.WithTimeout(ctx, 30*time.Second)
	defer done()
	cache.WaitForCacheSync(wctx.Done(), func() bool { return w.HasSynced() || w.Forbidden() })
}

// apply starts the watches the plan wants, stops the others (unless
// discovery was partial, when nothing is stopped), and publishes the new
// snapshot. A kind whose watched version changes is a new watch.
func (d *discoverer) apply(ctx context.Context, p plan, partial bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := newSnapshot()
	s.claims, s.xrds, s.served, s.ignoredXRDs = p.claims, p.xrds, p.served, len(p.ignored)
	watched := map[schema.GroupKind]bool{}
	for _, want := range p.watches {
		watched[want.gk] = true
	}
	if partial {
		for _, w := range d.watches {
			watched[w.gk] = true
		}
	}
	d.watched.Store(&watched)
	keep := map[schema.GroupVersionResource]bool{}
	for _, want := range p.watches {
		keep[want.gvr] = true
		w := d.watches[want.gvr]
		if w != nil && (w.role != want.role || w.gk != want.gk) {
			w.cancel()
			w = nil
		}
		if w == nil {
			w = d.start(ctx, want)
			d.watches[want.gvr] = w
			d.log.V(1).Info("watching", "resource", want.gvr.String(), "role", string(want.role))
		}
		s.add(w)
	}
	for gvr, w := range d.watches {
		if keep[gvr] {
			continue
		}
		if partial {
			s.add(w)
			continue
		}
		w.cancel()
		delete(d.watches, gvr)
		d.log.V(1).Info("stopped watching", "resource", gvr.String())
	}
	d.rule.found.snap.Store(s)
	d.rule.notifyRules()
}

// start watches one kind: metadata only for managed resources, whole
// objects (trimmed on arrival) for composite resources, whose resource
// references live in their spec.
func (d *discoverer) start(ctx context.Context, want wanted) *watch {
	store := newObjectStore()
	w := &watch{gk: want.gk, gvr: want.gvr, namespaced: want.namespaced, role: want.role, indexer: store, owners: d.rule.found.owners, objects: store.Len}
	cw := d.cluster.Watch(ctx, want.gvr, clustercache.Spec{
		Metadata:    want.role == roleManaged,
		Transform:   d.transform(want.role),
		Prepare:     d.rule.found.owners.prepare(w),
		Store:       store,
		Handler:     d.rule.found.owners.handler(w),
		OnSynced:    d.trigger,
		OnForbidden: d.onForbidden(want.gvr.GroupResource().String()),
	})
	w.synced, w.forbidden = cw.HasSynced, cw.Forbidden
	w.cancel = func() {
		cw.Stop()
		d.rule.found.owners.drop(w)
	}
	return w
}

// transform is the transform of a watch of role r: composites keep only
// their references to kinds no watch caches. composed finds what a
// composite composed of a watched kind through the owner index, and reads
// its references only for the kinds it cannot find there; references to
// watched kinds were a sixth of what claimguard kept per cached object.
// A kind that stops being watched later (its CRD removed, its objects
// going with it) is no longer named in messages as one Steward does not
// cache until the composite changes. Every object also takes the owner
// key of one transformed before it while the first lists arrive
// (listedKeys).
func (d *discoverer) transform(r role) cache.TransformFunc {
	return func(in any) (any, error) {
		out, err := transform(in)
		o, ok := out.(*object)
		if !ok || out == in {
			return out, err
		}
		d.listed.share(o)
		if r == roleComposite {
			if watched := d.watched.Load(); watched != nil {
				o.dropRefsTo(*watched)
			}
		}
		return out, err
	}
}

// onForbidden logs that Steward may not list a kind, whose requests are
// then answered with a warning instead of waiting for a sync that RBAC
// prevents, and plans again.
func (d *discoverer) onForbidden(what string) func(error) {
	return func(err error) {
		d.log.Info("Steward may not list a kind claimguard needs; requests for it are allowed with a warning until RBAC grants list and watch",
			"resource", what, "aggregationLabel", AggregationLabel, "error", err.Error())
		d.trigger()
	}
}

func (d *discoverer) stopAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	all := make([]*watch, 0, len(d.watches))
	for _, w := range d.watches {
		all = append(all, w)
	}
	d.rule.found.owners.dropAll(all)
	for gvr, w := range d.watches {
		w.cancel()
		delete(d.watches, gvr)
	}
	if d.xrds != nil {
		d.xrds.Stop()
	}
}

// notifyRules wakes the webhook rules syncer without blocking.
func (r *Rule) notifyRules() {
	select {
	case r.found.rulesChanged <- struct{}{}:
	default:
	}
}
