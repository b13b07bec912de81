package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// seeded is what seed created, for the workloads to refer to.
type seeded struct {
	composites     []string
	claims         []string
	kustomizations []string
	// Counts of objects created, by kind.
	XRs, MRs, Flux, Terminating int
	Took                        time.Duration
}

// compositeFor picks a seeded XR (and its claim) for the i-th write.
func (s *seeded) compositeFor(i int) (xr, claim string) {
	if len(s.composites) == 0 {
		return "xr-none", "none"
	}
	i %= len(s.composites)
	return s.composites[i], s.claims[i]
}

// kustomizationFor picks a seeded Kustomization for the i-th write; every
// other one is suspended.
func (s *seeded) kustomizationFor(i int) string {
	return s.kustomizations[i%len(s.kustomizations)]
}

// terminatingEvery makes one XR in this many (and its MRs) terminating:
// created with Crossplane's finalizer and then deleted, as during a slow
// Foreground deletion, so claimguard's lookups find some.
const terminatingEvery = 100

// seedWorkers is how many objects are created in parallel.
const seedWorkers = 32

// seed creates xrs composite resources with mrs managed resources spread
// over them (each XR lists its MRs, each MR is owned by its XR and carries
// an external name), and flux Flux objects (half Kustomizations, a quarter
// each HelmReleases and GitRepositories; one in four suspended).
func seed(ctx context.Context, c *cluster, xrs, mrs, flux int) (*seeded, error) {
	start := time.Now()
	s := &seeded{}
	for i := range xrs {
		claimName := fmt.Sprintf("db-%05d", i)
		s.claims = append(s.claims, claimName)
		s.composites = append(s.composites, fmt.Sprintf("%s-%s", claimName, suffix(i)))
	}
	nKs := max(flux/2, 2)
	for i := range nKs {
		s.kustomizations = append(s.kustomizations, fmt.Sprintf("app-%05d", i))
	}

	var created, terminating atomic.Int64
	tasks := make(chan func() error)
	errs := make(chan error, seedWorkers)
	var wg sync.WaitGroup
	for range seedWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tasks {
				if err := t(); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	send := func(t func() error) error {
		for {
			select {
			case tasks <- t:
				return nil
			case err := <-errs:
				return err
			case <-progress.C:
				logf("seeding: %d objects created", created.Load())
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	xrClient := c.dyn.Resource(compositeGVR)
	mrClient := c.dyn.Resource(managedGVR)
	var sendErr error
	for i := range xrs {
		// MRs are spread evenly: XR i gets its share of the remainder.
		n := mrs / xrs
		if i < mrs%xrs {
			n++
		}
		xrName, claimName := s.composites[i], s.claims[i]
		dying := i%terminatingEvery == terminatingEvery-1
		if sendErr = send(func() error {
			names := make([]string, n)
			for j := range names {
				names[j] = fmt.Sprintf("%s-%s%c", xrName, suffix(i*131 + j)[:4], suffixLetters[j%len(suffixLetters)])
			}
			xr := composite(xrName, claimName, names)
			if dying {
				xr.SetFinalizers([]string{"composite.apiextensions.crossplane.io"})
			}
			got, err := createRetry(ctx, xrClient, xr)
			if err != nil {
				return fmt.Errorf("seeding XR %s: %w", xrName, err)
			}
			created.Add(1)
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
				created.Add(1)
				if dying {
					if err := mrClient.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
						return fmt.Errorf("deleting MR %s: %w", name, err)
					}
					terminating.Add(1)
				}
			}
			if dying {
				fg := metav1.DeletePropagationForeground
				if err := xrClient.Delete(ctx, xrName, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
					return fmt.Errorf("deleting XR %s: %w", xrName, err)
				}
				terminating.Add(1)
			}
			return nil
		}); sendErr != nil {
			break
		}
	}
	for i := 0; sendErr == nil && i < max(flux, nKs); i++ {
		var obj *unstructured.Unstructured
		var res = ksGVR
		suspended := i%4 == 1
		switch {
		case i < nKs:
			obj = kustomization(s.kustomizations[i], i%2 == 1)
		case i%2 == 0:
			obj, res = helmRelease(fmt.Sprintf("release-%05d", i), suspended), hrGVR
		default:
			obj, res = gitRepository(fmt.Sprintf("repo-%05d", i), suspended), gitRepoGVR
		}
		sendErr = send(func() error {
			if _, err := createRetry(ctx, c.dyn.Resource(res).Namespace(fluxNamespace), obj); err != nil {
				return fmt.Errorf("seeding %s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
			created.Add(1)
			return nil
		})
	}
	close(tasks)
	wg.Wait()
	if sendErr != nil {
		return nil, sendErr
	}
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	s.XRs, s.MRs, s.Flux = xrs, mrs, max(flux, nKs)
	s.Terminating = int(terminating.Load())
	s.Took = time.Since(start)
	return s, nil
}

// suffixLetters are the characters of generated name suffixes.
const suffixLetters = "bcdfghjklmnpqrstvwxz2456789"

// createRetry creates obj, retrying a few times: on a busy machine a
// create can time out, and one lost object must not end a long seeding.
// An object that exists already (a retried create that had succeeded) is
// read back.
func createRetry(ctx context.Context, c dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var err error
	for attempt := range 4 {
		var got *unstructured.Unstructured
		if got, err = c.Create(ctx, obj, metav1.CreateOptions{}); err == nil {
			return got, nil
		}
		if apierrors.IsAlreadyExists(err) {
			return c.Get(ctx, obj.GetName(), metav1.GetOptions{})
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 500 * time.Millisecond)
	}
	return nil, err
}

// suffix is a deterministic five-letter suffix, like the random one
// Crossplane appends to a claim's XR and an XR's MRs.
func suffix(i int) string {
	const letters = suffixLetters
	x := uint32(i)*2654435761 + 12345
	b := make([]byte, 5)
	for j := range b {
		b[j] = letters[x%uint32(len(letters))]
		x /= uint32(len(letters))
		x ^= uint32(i) * 40503
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }
