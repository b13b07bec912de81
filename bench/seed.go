package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stewardhq/steward/e2e/harness"
)

// Seeding fills the API server before a measurement: the Crossplane and
// Flux mix (Mix), which both the load run's large caches and the scale
// scenarios grow, MR kinds (SeedKinds) and Fleet-managed Deployments
// (SeedFleet). All of them write through createAll, straight to the API
// server from many goroutines, and create custom resources with
// createRetry.

// createAll runs create for every i in [0, n) on at most workers
// goroutines at once (started in order of i) and returns the first error.
func createAll(ctx context.Context, workers, n int, create func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error { return create(ctx, i) })
	}
	return g.Wait()
}

// createRetry creates obj, retrying a few times: on a busy machine a create
// can time out, and one lost object must not end a long seeding. An object
// that exists already (a retried create that had succeeded) is read back.
func createRetry(ctx context.Context, c dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var err error
	for attempt := range 4 {
		var got *unstructured.Unstructured
		if got, err = c.Create(ctx, obj, metav1.CreateOptions{}); err == nil {
			return got, nil
		} else if apierrors.IsAlreadyExists(err) {
			return c.Get(ctx, obj.GetName(), metav1.GetOptions{})
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 500 * time.Millisecond)
	}
	return nil, fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
}

// seedComposite creates XR xr of claim claim and, owned by it, the MRs it
// composes. A dying XR and its MRs are created with Crossplane's
// finalizers and then deleted, as during a slow Foreground deletion, so
// claimguard's lookups find some terminating.
func seedComposite(ctx context.Context, dyn dynamic.Interface, xr, claim string, mrs []*unstructured.Unstructured, dying bool) error {
	obj := composite(xr, claim, mrs)
	if dying {
		obj.SetFinalizers([]string{"composite.apiextensions.crossplane.io"})
	}
	got, err := createRetry(ctx, dyn.Resource(compositeGVR), obj)
	if err != nil {
		return err
	}
	owner := []metav1.OwnerReference{{APIVersion: got.GetAPIVersion(), Kind: got.GetKind(), Name: got.GetName(), UID: got.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	for _, mr := range mrs {
		mr.SetOwnerReferences(owner)
		if dying {
			mr.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
		}
		res := dyn.Resource(MRResources()[mr.GetKind()])
		if _, err := createRetry(ctx, res, mr); err != nil {
			return err
		}
		if dying {
			if err := res.Delete(ctx, mr.GetName(), metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("deleting MR %s: %w", mr.GetName(), err)
			}
		}
	}
	if dying {
		return dyn.Resource(compositeGVR).Delete(ctx, xr, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	}
	return nil
}

// seedFlux creates a Flux object (FluxObject) in FluxNamespace.
func seedFlux(ctx context.Context, dyn dynamic.Interface, kind, name string, suspended bool) error {
	_, err := createRetry(ctx, dyn.Resource(fluxResources[kind]).Namespace(FluxNamespace), FluxObject(kind, name, suspended))
	return err
}

// FullObjects is the mix the goals name for the load run and the first
// size of the scale scenarios, and FullMix what it holds.
const (
	FullObjects = 65_000
	FullMix     = "10k XRs, 50k MRs and 5k Flux objects"
)

// TerminatingEvery makes one XR in this many (and its MRs) terminating.
const TerminatingEvery = 100

// SeedStep is one growth of the mix: what it holds afterwards, how many
// objects it added and how long that took.
type SeedStep struct {
	Total, Added, XRs, MRs, Flux int
	Took                         time.Duration
}

// Rate is the objects added per second.
func (s SeedStep) Rate() float64 { return float64(s.Added) / max(s.Took.Seconds(), 1e-9) }

// Mix is the Crossplane and Flux mix, grown in place (GrowTo): for every
// composite resource (a v1 XPostgreSQLInstance of a claim) five composed
// MRs of real provider-sql kinds (composedKinds), one XR in
// TerminatingEvery being deleted with its MRs, and a Flux object for every
// other XR. Dyn creates them, Workers at a time.
type Mix struct {
	Dyn            dynamic.Interface
	Workers        int
	xrs, mrs, flux int
}

// mrsPerXR is the mix's 1 XR : 5 MRs; fluxEvery its ½ Flux object per XR.
const mrsPerXR, fluxEvery = 5, 2

// composedKinds are the five MRs of each XR of the mix: a Database, a
// Role, a Schema and two Grants (every kind once, and one kind several
// times), each with the name of the composition step that made it.
var composedKinds = [mrsPerXR][2]string{{"Database", "database"}, {"Role", "owner-role"}, {"Schema", "app-schema"}, {"Grant", "grant-connect"}, {"Grant", "grant-usage"}}

// Total is how many objects the mix holds, and Composed how many of them
// are XRs and MRs: what claimguard caches.
func (m *Mix) Total() int    { return m.xrs + m.mrs + m.flux }
func (m *Mix) Composed() int { return m.xrs + m.mrs }

// mixFor splits total objects into the mix: 2 XRs to 10 MRs to 1 Flux
// object in 13.
func mixFor(total int) (xrs, flux int) {
	xrs = total * fluxEvery / (fluxEvery*(1+mrsPerXR) + 1)
	return xrs, total - xrs*(1+mrsPerXR)
}

// The names of the mix's i-th XR (and its claim) and Flux object.
func mixComposite(i int) (xr, claim string) {
	claim = fmt.Sprintf("scale-%06d", i)
	return claim + "-" + suffix(i), claim
}

func mixFlux(i int) (kind, name string) {
	kind = fluxKinds[i%len(fluxKinds)]
	return kind, fmt.Sprintf("scale-%s-%06d", strings.ToLower(kind), i)
}

// fluxKinds are the kinds of the mix's Flux objects, in turn.
var fluxKinds = [4]string{"Kustomization", "HelmRelease", "Kustomization", "GitRepository"}

// Composite picks one of the mix's XRs (and its claim) for the i-th write.
func (m *Mix) Composite(i int) (xr, claim string) { return mixComposite(i % max(m.xrs, 1)) }

// Kustomization picks one of the mix's Kustomizations for the i-th write.
func (m *Mix) Kustomization(i int) string {
	_, name := mixFlux(2 * (i % max((m.flux+1)/2, 1)))
	return name
}

// GrowTo creates objects until the mix holds total: XRs with their MRs,
// then Flux objects (half Kustomizations, then HelmReleases and
// GitRepositories, a quarter of them suspended).
func (m *Mix) GrowTo(ctx context.Context, total int) (SeedStep, error) {
	start, before := time.Now(), m.Total()
	xrs, flux := mixFor(total)
	newXRs := max(xrs-m.xrs, 0)
	err := createAll(ctx, m.Workers, newXRs+max(flux-m.flux, 0), func(ctx context.Context, i int) error {
		if i < newXRs {
			i += m.xrs
			xr, claim := mixComposite(i)
			mrs := make([]*unstructured.Unstructured, len(composedKinds))
			for j, k := range composedKinds {
				mrs[j] = ComposedMR(k[0], fmt.Sprintf("%s-%s", xr, suffix(i*7+j)), xr, claim, k[1])
			}
			return seedComposite(ctx, m.Dyn, xr, claim, mrs, i%TerminatingEvery == TerminatingEvery-1)
		}
		i += m.flux - newXRs
		kind, name := mixFlux(i)
		return seedFlux(ctx, m.Dyn, kind, name, i%4 == 2)
	})
	if err != nil {
		return SeedStep{}, err
	}
	m.xrs, m.mrs, m.flux = max(m.xrs, xrs), max(m.xrs, xrs)*mrsPerXR, max(m.flux, flux)
	return SeedStep{Total: m.Total(), Added: m.Total() - before, XRs: m.xrs, MRs: m.mrs, Flux: m.flux, Took: time.Since(start)}, nil
}

// crdOptions reads CRDs from files and directories under the repository
// root, and waits up to ten minutes for them to be served: every new CRD
// makes the API server rebuild its OpenAPI, which takes long with many.
func crdOptions(paths ...string) (envtest.CRDInstallOptions, error) {
	root, err := harness.RepoRoot()
	for i := range paths {
		paths[i] = filepath.Join(root, paths[i])
	}
	return envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true, MaxTime: 10 * time.Minute, PollInterval: 100 * time.Millisecond}, err
}

// SeedKinds creates n MR kinds, copies of provider-sql's Database CRD
// renamed (renamedCRD, still in the "managed" category), and perKind
// composed objects of each; it returns how many objects it created.
func SeedKinds(ctx context.Context, env *harness.Env, dyn dynamic.Interface, n, perKind, workers int) (int, error) {
	opts, err := crdOptions(filepath.Join("e2e", "upstream", "provider-sql", sqlGroup+"_databases.yaml"))
	if err == nil {
		err = envtest.ReadCRDFiles(&opts)
	}
	if err != nil {
		return 0, err
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, n)
	for i := range crds {
		crds[i] = renamedCRD(opts.CRDs[0], i)
	}
	// Each new CRD makes the API server rebuild its OpenAPI: a few at once.
	if err := createAll(ctx, min(workers, 8), n, func(ctx context.Context, i int) error {
		if err := env.Client.Create(ctx, crds[i]); err != nil {
			return fmt.Errorf("creating CRD %s: %w", crds[i].Name, err)
		}
		return nil
	}); err != nil {
		return 0, err
	}
	if err := envtest.WaitForCRDs(env.Config, crds, opts); err != nil {
		return 0, fmt.Errorf("waiting for the generated MR kinds to be served: %w", err)
	}
	return n * perKind, createAll(ctx, workers, n*perKind, func(ctx context.Context, k int) error {
		i, crd := k/perKind, crds[k/perKind]
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Resource: crd.Spec.Names.Plural}
		xr := fmt.Sprintf("kinds-%03d-%s", i, suffix(i))
		mr := ComposedMR("Database", fmt.Sprintf("%s-%s", xr, suffix(i*31+k%perKind)), xr, fmt.Sprintf("kinds-%03d", i), "database")
		mr.SetAPIVersion(gvr.GroupVersion().String())
		mr.SetKind(crd.Spec.Names.Kind)
		_, err := createRetry(ctx, dyn.Resource(gvr), mr)
		return err
	})
}

// RemoveKinds deletes the generated MR kinds and waits until they are
// gone. It deletes them as a collection on purpose, not one by one (as
// harness.Env.DeleteCRDs does): the API server adds its cleanup finalizer
// only to a CRD deleted singly, and that finalizer would wait forever for
// the kinds' objects, which keep the provider's finalizer with no provider
// to remove it. Deleted as a collection, the kinds go at once, and their
// objects stay in etcd, no longer served, until the run's API server is
// thrown away.
func RemoveKinds(ctx context.Context, env *harness.Env) error {
	sel := client.MatchingLabels{Label: KindsScenario}
	if err := env.Client.DeleteAllOf(ctx, &apiextensionsv1.CustomResourceDefinition{}, sel); err != nil {
		return fmt.Errorf("removing the generated MR kinds: %w", err)
	}
	return harness.Poll(ctx, 10*time.Minute, func() error {
		list := &apiextensionsv1.CustomResourceDefinitionList{}
		if err := env.Client.List(ctx, list, sel); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d generated MR kinds still being removed", len(list.Items))
		}
		return nil
	})
}

// SeedFleet creates n Fleet-managed Deployments (fleetWorkload) as the
// Fleet agent, with its field manager, and reports their status as the
// deployment controller would, so each carries both managedFields entries.
func SeedFleet(ctx context.Context, agent, admin kubernetes.Interface, n, workers int) error {
	return createAll(ctx, workers, n, func(ctx context.Context, i int) error {
		d, err := fleetWorkload(i)
		if err != nil {
			return err
		}
		got, err := agent.AppsV1().Deployments(FleetNamespace).Create(ctx, d, metav1.CreateOptions{FieldManager: fleetFieldManager})
		if err != nil {
			return fmt.Errorf("creating Deployment %s: %w", d.Name, err)
		}
		replicas := *got.Spec.Replicas
		now := metav1.NewTime(time.Now())
		got.Status = appsv1.DeploymentStatus{
			ObservedGeneration: got.Generation, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.", LastUpdateTime: now, LastTransitionTime: now},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", got.Name+"-7f9d8c6b5"), LastUpdateTime: now, LastTransitionTime: now},
			},
		}
		if _, err := admin.AppsV1().Deployments(FleetNamespace).UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
			return fmt.Errorf("updating the status of Deployment %s: %w", d.Name, err)
		}
		return nil
	})
}
