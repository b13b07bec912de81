package claimguard

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Timings of the discovery loop.
const (
	// debounce gathers a burst of CRD and XRD events into one resync.
	debounce = 200 * time.Millisecond
	// retryAfter is how soon a resync is repeated when discovery failed or
	// a CRD is not served yet (it becomes served once Established).
	retryAfter = 2 * time.Second
	// resyncEvery is the safety net when no event arrives.
	resyncEvery = 5 * time.Minute
	// readyWithin bounds how long one kind whose cache cannot sync (for a
	// reason other than RBAC) holds back readiness at start-up; requests for
	// that kind are answered with an error until it syncs.
	readyWithin = time.Minute
)

// discoveryAPI is the part of client-go's discovery client claimguard uses;
// the real client answers from aggregated discovery in one request.
type discoveryAPI interface {
	ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error)
}

// discoverer keeps claimguard's snapshot in step with the cluster: it
// watches CRDs (metadata only) and XRDs, asks discovery which kinds are
// served, and starts and stops one informer per composite and managed kind.
type discoverer struct {
	rule  *Rule
	log   logr.Logger
	disco discoveryAPI
	dyn   dynamic.Interface
	meta  metadata.Interface

	kick chan struct{}

	crds      cache.SharedIndexInformer
	crdDenied watch // only its forbidden flag is used
	xrds      cache.SharedIndexInformer
	xrdGVR    schema.GroupVersionResource
	xrdCancel context.CancelFunc
	xrdDenied watch

	mu      sync.Mutex
	watches map[schema.GroupVersionResource]*watch
	// ignored are the XRDs last found not composable, with the reason.
	ignored map[string]string
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

// Start runs the discovery loop until ctx ends, then stops every informer.
func (d *discoverer) Start(ctx context.Context) error {
	d.watches = map[schema.GroupVersionResource]*watch{}
	d.crds = metadatainformer.NewFilteredMetadataInformer(d.meta, crdGVR, "", 0, nil, nil).Informer()
	_ = d.crds.SetTransform(transform)
	_, _ = d.crds.AddEventHandler(d.handler())
	_ = d.crds.SetWatchErrorHandlerWithContext(d.onWatchError(&d.crdDenied, "customresourcedefinitions"))
	go d.crds.RunWithContext(ctx)
	cache.WaitForCacheSync(ctx.Done(), func() bool { return d.crds.HasSynced() || d.crdDenied.forbidden.Load() })

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
		case <-timer.C:
		}
		next := resyncEvery
		if !d.resync(ctx) {
			next = retryAfter
		}
		if !d.rule.ready.Load() {
			if pending := d.pending(); len(pending) == 0 {
				d.rule.ready.Store(true)
				d.log.Info("caches synced; ready")
			} else if time.Since(started) > readyWithin {
				d.rule.ready.Store(true)
				d.log.Info("ready although some caches have not synced; requests for these kinds are refused until they do", "kinds", pending)
			} else if next > retryAfter {
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
	if d.xrds != nil && !d.xrds.HasSynced() && !d.xrdDenied.forbidden.Load() {
		out = append(out, xrdGroupResource.String())
	}
	if s := d.rule.snap.Load(); s != nil {
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

// resync brings the snapshot up to date; it returns false when it should
// be repeated soon (discovery failed or something is not served yet).
func (d *discoverer) resync(ctx context.Context) bool {
	groups, lists, err := d.disco.ServerGroupsAndResources()
	partial := err != nil
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		d.log.Error(err, "discovery failed; keeping the previous view")
		return false
	}
	resources := resourcesFrom(groups, lists)
	d.ensureXRDInformer(ctx, resources)

	var xrds []*xrd
	if d.xrds != nil {
		for _, item := range d.xrds.GetStore().List() {
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
	p := makePlan(resources, xrds, d.crdNames())
	d.warnIgnored(p.ignored)
	d.apply(ctx, p, partial)
	return !partial && d.allServed(resources, xrds)
}

// crdNames are the group and resource of every CustomResourceDefinition.
func (d *discoverer) crdNames() map[schema.GroupResource]bool {
	out := map[schema.GroupResource]bool{}
	for _, item := range d.crds.GetStore().List() {
		if o, ok := item.(*object); ok {
			out[schema.ParseGroupResource(o.name)] = true
		}
	}
	return out
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

// allServed reports whether every CRD and every XRD's composite kind is in
// discovery; a CRD that is not yet Established is not.
func (d *discoverer) allServed(resources map[schema.GroupResource]*apiResource, xrds []*xrd) bool {
	for _, x := range xrds {
		if resources[x.compositeGR()] == nil {
			return false
		}
	}
	for _, item := range d.crds.GetStore().List() {
		o, ok := item.(*object)
		if !ok {
			continue
		}
		if resources[schema.ParseGroupResource(o.name)] == nil {
			return false
		}
	}
	return true
}

// ensureXRDInformer starts the XRD informer once XRDs are served, at the
// most preferred version claimguard reads, and waits for its first list.
func (d *discoverer) ensureXRDInformer(ctx context.Context, resources map[schema.GroupResource]*apiResource) {
	a := resources[xrdGroupResource]
	var want schema.GroupVersionResource
	if a != nil {
		for _, v := range xrdVersions {
			if slices.Contains(a.versions, v) {
				want = xrdGroupResource.WithVersion(v)
				break
			}
		}
	}
	if want == d.xrdGVR {
		return
	}
	if d.xrdCancel != nil {
		d.xrdCancel()
		d.xrds, d.xrdCancel = nil, nil
	}
	d.xrdGVR = want
	if want.Empty() {
		return
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(d.dyn, want, "", 0, cache.Indexers{}, nil).Informer()
	_ = inf.SetTransform(trimXRD)
	_, _ = inf.AddEventHandler(d.handler())
	d.xrdDenied.forbidden.Store(false)
	_ = inf.SetWatchErrorHandlerWithContext(d.onWatchError(&d.xrdDenied, xrdGroupResource.String()))
	xctx, cancel := context.WithCancel(ctx)
	d.xrds, d.xrdCancel = inf, cancel
	go inf.RunWithContext(xctx)
	wctx, done := context.WithTimeout(xctx, 30*time.Second)
	defer done()
	cache.WaitForCacheSync(wctx.Done(), func() bool { return inf.HasSynced() || d.xrdDenied.forbidden.Load() })
}

// apply starts the watches the plan wants, stops the others (unless
// discovery was partial, when nothing is stopped), and publishes the new
// snapshot.
func (d *discoverer) apply(ctx context.Context, p plan, partial bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := newSnapshot()
	s.claims, s.xrds, s.served, s.ignoredXRDs = p.claims, p.xrds, p.served, len(p.ignored)
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
	d.rule.snap.Store(s)
	observe(s)
	d.rule.notifyRules()
}

// start runs one informer for a kind: metadata-only for managed resources,
// full objects (trimmed on arrival) for composite resources, whose
// resource references live in their spec.
func (d *discoverer) start(ctx context.Context, want wanted) *watch {
	var inf cache.SharedIndexInformer
	if want.role == roleManaged {
		inf = metadatainformer.NewFilteredMetadataInformer(d.meta, want.gvr, "", 0, managedIndexers(), nil).Informer()
	} else {
		inf = dynamicinformer.NewFilteredDynamicInformer(d.dyn, want.gvr, "", 0, compositeIndexers(), nil).Informer()
	}
	_ = inf.SetTransform(transform)
	wctx, cancel := context.WithCancel(ctx)
	w := &watch{gk: want.gk, gvr: want.gvr, namespaced: want.namespaced, role: want.role, indexer: inf.GetIndexer(), synced: inf.HasSynced, cancel: cancel}
	_ = inf.SetWatchErrorHandlerWithContext(d.onWatchError(w, want.gvr.GroupResource().String()))
	go inf.RunWithContext(wctx)
	go func() {
		if cache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
			w.forbidden.Store(false)
			d.trigger()
		}
	}()
	return w
}

// onWatchError marks a watch forbidden when Steward may not list its kind,
// so requests are answered with a warning instead of waiting for a sync
// that RBAC prevents; other errors keep client-go's handling (log, retry).
func (d *discoverer) onWatchError(w *watch, what string) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			if !w.forbidden.Swap(true) {
				d.log.Info("Steward may not list a kind claimguard needs; requests for it are allowed with a warning until RBAC grants list and watch",
					"resource", what, "aggregationLabel", AggregationLabel, "error", err.Error())
				d.trigger()
			}
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}
}

func (d *discoverer) stopAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for gvr, w := range d.watches {
		w.cancel()
		delete(d.watches, gvr)
	}
	if d.xrdCancel != nil {
		d.xrdCancel()
	}
}

// notifyRules wakes the webhook rules syncer without blocking.
func (r *Rule) notifyRules() {
	select {
	case r.rulesChanged <- struct{}{}:
	default:
	}
}
