package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stewardhq/steward/e2e/harness"
)

// managedKindBudget is the most resident memory one managed resource kind
// with no objects may add to Steward: 64 MiB for 500 kinds, as many as a
// cluster running several large providers serves.
const managedKindBudget = 64 << 20 / 500

// TestManagedKindsCostBoundedMemory installs many managed resource kinds
// with no objects (copies of provider-sql's real Database CRD under other
// groups and kinds, in the "managed" category, as a large provider
// installs them), and proves that the informer claimguard runs for each
// adds at most managedKindBudget of resident memory to a Steward started
// with them. E2E_MR_KINDS sets how many (100 unless set).
func TestManagedKindsCostBoundedMemory(t *testing.T) {
	kinds := 100
	if n, err := strconv.Atoi(os.Getenv("E2E_MR_KINDS")); err == nil && n > 0 {
		kinds = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(kinds)*time.Second+3*time.Minute)
	defer cancel()
	keepStewardRunning(t)

	type sample struct {
		rss        int64
		goroutines float64
		synced     float64
	}
	measure := func() sample {
		t.Helper()
		s, err := env.RestartSteward(ctx, harness.DefaultConfig)
		if err != nil {
			t.Fatal(err)
		}
		m, err := harness.ProcessMemory(s.PID())
		if err != nil {
			t.Fatal(err)
		}
		g, err := s.Counter("go_goroutines", nil)
		if err != nil {
			t.Fatal(err)
		}
		synced, err := s.Counter("steward_claimguard_watched_kinds", map[string]string{"role": "managed", "state": "synced"})
		if err != nil {
			t.Fatal(err)
		}
		return sample{rss: m.RSS, goroutines: g, synced: synced}
	}
	before := measure()

	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "e2e", "upstream", "provider-sql", "postgresql.sql.crossplane.io_databases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := harness.ParseObjects("provider-sql Database CRD", data)
	if err != nil || len(objs) != 1 {
		t.Fatalf("reading provider-sql's Database CRD: %d objects, %v", len(objs), err)
	}
	var upstream apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, &upstream); err != nil {
		t.Fatal(err)
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, kinds)
	for i := range crds {
		crd := upstream.DeepCopy()
		// Ten kinds to a group, as providers group theirs by service.
		crd.Spec.Group = fmt.Sprintf("service%d.managedkinds.example.org", i/10)
		crd.Spec.Names.Kind = fmt.Sprintf("Thing%d", i)
		crd.Spec.Names.ListKind = crd.Spec.Names.Kind + "List"
		crd.Spec.Names.Singular = fmt.Sprintf("thing%d", i)
		crd.Spec.Names.Plural = fmt.Sprintf("things%d", i)
		crd.Name = crd.Spec.Names.Plural + "." + crd.Spec.Group
		crd.ResourceVersion = ""
		crds[i] = crd
	}
	t.Cleanup(func() {
		for _, crd := range crds {
			if err := env.Client.Delete(context.Background(), crd); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("removing CRD %s: %v", crd.Name, err)
			}
		}
	})
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(crds))
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(crds); i += 8 {
				errs <- env.Client.Create(ctx, crds[i])
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("creating the managed kinds' CRDs: %v", err)
		}
	}
	want := before.synced + float64(kinds)
	harness.Eventually(t, time.Duration(kinds)*time.Second+time.Minute, func() error {
		got, err := env.Steward.Counter("steward_claimguard_watched_kinds", map[string]string{"role": "managed", "state": "synced"})
		if err != nil {
			return err
		}
		if got < want {
			return fmt.Errorf("claimguard has synced %.0f managed kinds, want %.0f", got, want)
		}
		return nil
	})
	t.Logf("%d managed kinds installed and synced by the running Steward in %s", kinds, time.Since(start).Round(time.Second))

	after := measure()
	if after.synced < want {
		t.Fatalf("restarted with %d more managed kinds, claimguard has synced %.0f, want %.0f", kinds, after.synced, want)
	}
	added := after.rss - before.rss
	t.Logf("%d managed kinds without objects: resident memory %.1f → %.1f MiB (%.1f KiB a kind), goroutines %.0f → %.0f (%.1f a kind)",
		kinds, mib(before.rss), mib(after.rss), float64(added)/1024/float64(kinds), before.goroutines, after.goroutines, (after.goroutines-before.goroutines)/float64(kinds))
	if added > int64(kinds)*managedKindBudget {
		t.Errorf("%d managed kinds added %.1f MiB, over the %.1f MiB budget (%d KiB a kind)", kinds, mib(added), mib(int64(kinds)*managedKindBudget), managedKindBudget/1024)
	}
}
