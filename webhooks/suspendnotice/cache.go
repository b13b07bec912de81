package suspendnotice

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks/internal/servedcache"
)

// SetupWithManager starts metadata-only informers for the Flux kinds, from
// which the event webhook learns whether an object is suspended (the
// steward.dev/suspended-at annotation). Each starts once its CRD is
// served: Flux may not be installed, or only some of its controllers. The
// kinds served at start-up gate readiness; a kind whose CRD appears later is
// looked up once its informer has synced, and until then its events pass
// untouched.
func (r *Rule) SetupWithManager(mgr manager.Manager) error {
	meta, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("%s: metadata client: %w", Name, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("%s: discovery client: %w", Name, err)
	}
	newInformer := func(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
		inf := metadatainformer.NewFilteredMetadataInformer(meta, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
		// Set before the informer runs, so it cannot fail.
		_ = inf.SetTransform(keepSuspension)
		return inf
	}
	resources := make([]schema.GroupResource, len(fluxKinds))
	for i, k := range fluxKinds {
		resources[i] = k.groupResource()
	}
	set := servedcache.New(Name, resources, servedcache.PreferredResources(dc), newInformer, 0, mgr.GetLogger().WithName(Name))
	r.suspensions = suspensions{set}
	return set.AddToManager(mgr, Name+"-flux-objects")
}

// suspensions looks the record up in the cache.
type suspensions struct{ set *servedcache.Set }

func (s suspensions) Suspended(gr schema.GroupResource, namespace, name string) bool {
	obj, ok := s.set.Get(gr, namespace, name)
	if !ok {
		return false
	}
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return false
	}
	_, suspended := m.Annotations[AnnotationSuspendedAt]
	return suspended
}

// keepSuspension keeps an object's identity and, if present, the
// suspended-at annotation: not its labels, other annotations (a
// last-applied-configuration can be large) or managedFields. It is
// idempotent, as informers require.
func keepSuspension(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	slim := &metav1.PartialObjectMetadata{
		TypeMeta: m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:            m.Name,
			Namespace:       m.Namespace,
			UID:             m.UID,
			ResourceVersion: m.ResourceVersion,
		},
	}
	if at, ok := m.Annotations[AnnotationSuspendedAt]; ok {
		slim.Annotations = map[string]string{AnnotationSuspendedAt: at}
	}
	return slim, nil
}
