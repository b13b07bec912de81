package clustercache

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Timings of the discovery loop.
const (
	// debounce gathers a burst of CRD events into one discovery.
	debounce = 200 * time.Millisecond
	// retryAfter is how soon discovery is repeated when it failed, when a
	// CRD is not served yet (it is once Established), and after a CRD
	// changed, since the API server updates discovery a moment later.
	retryAfter = 2 * time.Second
	// settleRounds is how many times discovery is repeated at retryAfter
	// after a CRD changed.
	settleRounds = 3
	// pollEvery replaces the CRD watch when Steward may not list CRDs.
	pollEvery = 30 * time.Second
	// resyncEvery is the safety net when no CRD changes.
	resyncEvery = 5 * time.Minute
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// DiscoveryAPI is the part of client-go's discovery client the Cache uses;
// the real client answers from aggregated discovery in one request.
type DiscoveryAPI interface {
	ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error)
}

// Cache follows what the cluster serves and runs the rules' informers. It
// is a manager Runnable; every replica runs one.
type Cache struct {
	disco DiscoveryAPI
	meta  metadata.Interface
	dyn   dynamic.Interface
	log   logr.Logger

	kick         chan struct{}
	crds         cache.SharedIndexInformer
	crdForbidden atomic.Bool

	served atomic.Pointer[Served]

	mu          sync.Mutex
	subscribers []chan struct{}
	sets        []*Set
}

// New builds the Cache's clients from the manager's config and HTTP client.
// Nothing talks to the cluster until Start.
func New(cfg *rest.Config, client *http.Client, log logr.Logger) (*Cache, error) {
	disco, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, client)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	meta, err := metadata.NewForConfigAndClient(cfg, client)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, client)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return NewWithClients(disco, meta, dyn, log), nil
}

// NewWithClients builds a Cache over the given clients (fakes, in tests).
func NewWithClients(disco DiscoveryAPI, meta metadata.Interface, dyn dynamic.Interface, log logr.Logger) *Cache {
	return &Cache{disco: disco, meta: meta, dyn: dyn, log: log, kick: make(chan struct{}, 1)}
}

// NeedLeaderElection is false: every replica answers admission requests, so
// every replica needs its own caches.
func (c *Cache) NeedLeaderElection() bool { return false }

// Served is the latest discovery answer; nil until the first.
func (c *Cache) Served() *Served { return c.served.Load() }

// Subscribe returns a channel that receives after every discovery. It
// holds one notice: a slow reader misses none that matter, since Served
// is always the latest.
func (c *Cache) Subscribe() <-chan struct{} {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subscribers = append(c.subscribers, ch)
	return ch
}

func (c *Cache) trigger() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Start runs discovery until ctx ends: at once, on every CRD change, and
// every few minutes. Informers end with ctx.
func (c *Cache) Start(ctx context.Context) error {
	c.crds = metadatainformer.NewFilteredMetadataInformer(c.meta, crdGVR, "", 0, nil, nil).Informer()
	_ = c.crds.SetTransform(nameOnly)
	_, _ = c.crds.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.trigger() },
		UpdateFunc: func(any, any) { c.trigger() },
		DeleteFunc: func(any) { c.trigger() },
	})
	_ = c.crds.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			if !c.crdForbidden.Swap(true) {
				c.log.Info("Steward may not list CustomResourceDefinitions; asking discovery for new kinds every 30 s instead", "error", err.Error())
			}
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	go c.crds.RunWithContext(ctx)
	cache.WaitForCacheSync(ctx.Done(), func() bool { return c.crds.HasSynced() || c.crdForbidden.Load() })

	timer := time.NewTimer(0)
	defer timer.Stop()
	settle := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.kick:
			time.Sleep(debounce)
			select {
			case <-c.kick:
			default:
			}
			settle = settleRounds
		case <-timer.C:
		}
		next := resyncEvery
		if c.crdForbidden.Load() {
			next = pollEvery
		}
		if !c.discover(ctx) {
			next = retryAfter
		}
		if settle > 0 {
			settle--
			next = min(next, retryAfter)
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

// discover publishes a new answer, moves the Sets' informers and tells the
// subscribers. It returns false when it should be repeated soon: discovery
// failed, or a CRD is not served yet.
func (c *Cache) discover(ctx context.Context) bool {
	groups, lists, err := c.disco.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		c.log.Error(err, "discovery failed; keeping the previous view")
		return false
	}
	s := &Served{Resources: resourcesFrom(groups, lists), CRDs: map[schema.GroupResource]bool{}, CRDAppVersions: map[schema.GroupResource]string{}, Partial: err != nil}
	for _, item := range c.crds.GetStore().List() {
		if m, ok := item.(*metav1.PartialObjectMetadata); ok {
			gr := schema.ParseGroupResource(m.Name)
			s.CRDs[gr] = true
			if v := m.Labels[AppVersionLabel]; v != "" {
				s.CRDAppVersions[gr] = v
			}
		}
	}
	c.served.Store(s)
	c.mu.Lock()
	sets, subscribers := c.sets, c.subscribers
	c.mu.Unlock()
	for _, set := range sets {
		set.update(ctx, s)
	}
	for _, ch := range subscribers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	if s.Partial {
		return false
	}
	for gr := range s.CRDs {
		if s.Resources[gr] == nil {
			return false
		}
	}
	return true
}

// AppVersionLabel is the recommended Kubernetes label naming the version
// of the application an object belongs to. Flux's installation (`flux
// install`, the release's install.yaml) sets it on every object, its CRDs
// included, to the Flux release ("v2.8.1"), which is how apimigration
// tells which Flux release the cluster runs.
const AppVersionLabel = "app.kubernetes.io/version"

// nameOnly keeps a CRD's name (its group and resource) and its
// AppVersionLabel, and nothing else: no schemas, no other labels are kept.
// A change of the label is a CRD update like any other, so it triggers a
// discovery and every subscriber hears of it.
func nameOnly(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	keep := metav1.ObjectMeta{Name: m.Name, ResourceVersion: m.ResourceVersion}
	if v, ok := m.Labels[AppVersionLabel]; ok {
		keep.Labels = map[string]string{AppVersionLabel: v}
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: keep}, nil
}
