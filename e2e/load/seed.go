package main

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// seeded is what seed created, for the workloads to refer to.
type seeded struct {
	composites, claims, kustomizations []string
	XRs, MRs, Flux                     int
	Took                               time.Duration
}

// compositeFor picks a seeded XR (and its claim) for the i-th write.
func (s *seeded) compositeFor(i int) (xr, claim string) {
	if len(s.composites) == 0 {
		return "xr-none", "none"
	}
	i %= len(s.composites)
	return s.composites[i], s.claims[i]
}

// terminatingEvery makes one XR in this many (and its MRs) terminating:
// created with Crossplane's finalizer and then deleted, as during a slow
// Foreground deletion, so claimguard's lookups find some.
const terminatingEvery = 100

// seed creates xrs composite resources with mrs managed resources spread
// evenly over them (each XR lists its MRs, each MR is owned by its XR and
// carries an external name), and flux Flux objects (half Kustomizations,
// every other one suspended; the rest HelmReleases and GitRepositories,
// one in four suspended), 32 at a time.
func seed(ctx context.Context, c *cluster, xrs, mrs, flux int) (*seeded, error) {
	start, s := time.Now(), &seeded{}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	xrClient, mrClient := c.as("").dyn.Resource(compositeGVR), c.as("").dyn.Resource(managedGVR)
	for i := range xrs {
		claimName := fmt.Sprintf("db-%05d", i)
		xrName := claimName + "-" + suffix(i)
		s.claims, s.composites = append(s.claims, claimName), append(s.composites, xrName)
		names := make([]string, mrs/xrs+min(1, max(0, mrs%xrs-i)))
		for j := range names {
			names[j] = fmt.Sprintf("%s-%s%c", xrName, suffix(i*131 + j)[:4], suffixLetters[j%len(suffixLetters)])
		}
		dying := i%terminatingEvery == terminatingEvery-1
		g.Go(func() error {
			xr := composite(xrName, claimName, names)
			if dying {
				xr.SetFinalizers([]string{"composite.apiextensions.crossplane.io"})
			}
			got, err := createRetry(ctx, xrClient, xr)
			if err != nil {
				return fmt.Errorf("seeding XR %s: %w", xrName, err)
			}
			owner := metav1.OwnerReference{APIVersion: got.GetAPIVersion(), Kind: got.GetKind(), Name: got.GetName(), UID: got.GetUID(),
				Controller: ptr(true), BlockOwnerDeletion: ptr(true)}
			for _, name := range names {
				mr := managed(name, xrName, claimName)
				mr.SetOwnerReferences([]metav1.OwnerReference{owner})
				if dying {
					mr.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
				}
				if _, err := createRetry(ctx, mrClient, mr); err != nil {
					return fmt.Errorf("seeding MR %s: %w", name, err)
				}
				if dying {
					if err := mrClient.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
						return fmt.Errorf("deleting MR %s: %w", name, err)
					}
				}
			}
			if dying {
				return xrClient.Delete(ctx, xrName, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationForeground)})
			}
			return nil
		})
	}
	nKs := max(flux/2, 2)
	for i := range max(flux, nKs) {
		var obj *unstructured.Unstructured
		var res schema.GroupVersionResource
		switch {
		case i < nKs:
			s.kustomizations = append(s.kustomizations, fmt.Sprintf("app-%05d", i))
			obj, res = fluxObject("Kustomization", s.kustomizations[i], i%2 == 1), ksGVR
		case i%2 == 0:
			obj, res = fluxObject("HelmRelease", fmt.Sprintf("release-%05d", i), i%4 == 1), hrGVR
		default:
			obj, res = fluxObject("GitRepository", fmt.Sprintf("repo-%05d", i), i%4 == 1), gitRepoGVR
		}
		g.Go(func() error {
			_, err := createRetry(ctx, c.as("").dyn.Resource(res).Namespace(fluxNamespace), obj)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	s.XRs, s.MRs, s.Flux, s.Took = xrs, mrs, max(flux, nKs), time.Since(start)
	return s, nil
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

// suffixLetters are the characters of generated name suffixes.
const suffixLetters = "bcdfghjklmnpqrstvwxz2456789"

// suffix is a deterministic five-letter suffix, like the random one
// Crossplane appends to a claim's XR and an XR's MRs.
func suffix(i int) string {
	x, b := uint32(i)*2654435761+12345, make([]byte, 5)
	for j := range b {
		b[j] = suffixLetters[x%uint32(len(suffixLetters))]
		x = x/uint32(len(suffixLetters)) ^ uint32(i)*40503
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }
