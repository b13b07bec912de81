package bench

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the code")

// recorder keeps a line for every write a fake client receives: the verb,
// the resource, the object's name and a digest of what was sent (times,
// and what the fake server adds, left out: they differ from run to run).
type recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *recorder) react(action k8stesting.Action) (bool, runtime.Object, error) {
	line := fmt.Sprintf("%s %s %s", action.GetVerb(), action.GetResource().GroupResource(), action.GetSubresource())
	switch a := action.(type) {
	case interface{ GetObject() runtime.Object }: // creates and updates
		line += " " + digest(a.GetObject())
	case k8stesting.DeleteAction:
		line += " " + a.GetName()
	}
	r.mu.Lock()
	r.lines = append(r.lines, line)
	r.mu.Unlock()
	return false, nil, nil
}

// digest names an object and hashes its JSON without timestamps.
func digest(obj runtime.Object) string {
	data, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		panic(err)
	}
	var scrub func(v any)
	scrub = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range []string{"lastUpdateTime", "lastTransitionTime", "time", "creationTimestamp", "resourceVersion", "uid"} {
				delete(v, k)
			}
			for _, x := range v {
				scrub(x)
			}
		case []any:
			for _, x := range v {
				scrub(x)
			}
		}
	}
	scrub(m)
	name, _, _ := strings.Cut(fmt.Sprint(m["metadata"].(map[string]any)["name"]), "\n")
	data, _ = json.Marshal(m)
	return fmt.Sprintf("%s %x", name, sha256.Sum256(data))
}

// TestSeedingWritesTheKnownObjects grows the mix, which both the load run
// and the scale scenarios seed, twice (the second time past two XRs of the
// hundred that are terminating) and creates Fleet-managed Deployments against fake clients, and compares every write
// with testdata/seeded.golden: a change to how seeding is organised must
// not change what it writes.
func TestSeedingWritesTheKnownObjects(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	dyn.PrependReactor("*", "*", rec.react)
	mix := Mix{Dyn: dyn, Workers: 8}
	for _, total := range []int{130, 1300} {
		step, err := mix.GrowTo(ctx, total)
		if err != nil {
			t.Fatal(err)
		}
		xr, claim := mix.Composite(201)
		rec.lines = append(rec.lines, fmt.Sprintf("mix grown to %d: %d added, %d XRs, %d MRs, %d Flux objects; the 201st write's XR %s of claim %s, Kustomizations %s and %s",
			step.Total, step.Added, step.XRs, step.MRs, step.Flux, xr, claim, mix.Kustomization(0), mix.Kustomization(51)))
	}
	kube := kubefake.NewClientset()
	kube.PrependReactor("*", "*", rec.react)
	if err := SeedFleet(ctx, kube, kube, 3, 2); err != nil {
		t.Fatal(err)
	}
	slices.Sort(rec.lines)
	Golden(t, "seeded", strings.Join(rec.lines, "\n")+"\n", *update)
}

func TestMixHoldsTheGoalsObjects(t *testing.T) {
	if xrs, flux := mixFor(FullObjects); xrs != 10000 || flux != 5000 {
		t.Errorf("mixFor(%d) = %d XRs, %d Flux objects; want 10000 and 5000 (and 50000 MRs): %s", FullObjects, xrs, flux, FullMix)
	}
}
