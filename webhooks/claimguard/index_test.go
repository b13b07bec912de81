package claimguard

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
)

// TestOwnerIndexFollowsTheStore runs a real informer, with claimguard's
// transform, over a fake source of managed resources and checks the owner
// and claim index kept from its events against the store's own objects,
// through adds, updates that change the owner or start a deletion,
// deletes, and a relist that missed changes; then the watch stops and its
// objects leave the index.
func TestOwnerIndexFollowsTheStore(t *testing.T) {
	source := fcache.NewFakeControllerSource()
	tr := true
	rv := 0
	mr := func(name, owner string, deleting bool) *metav1.PartialObjectMetadata {
		rv++
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:          map[string]string{labelClaimNamespace: "default", labelClaimName: owner},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "database.example.org/v1alpha1", Kind: "XPostgreSQLInstance", Name: owner, Controller: &tr}},
		}}
		if deleting {
			d := metav1.NewTime(now)
			m.DeletionTimestamp = &d
		}
		return m
	}
	source.Add(mr("a", "x1", false))
	source.Add(mr("b", "x1", true))
	source.Add(mr("c", "x2", false))
	informer := cache.NewSharedIndexInformer(source, &metav1.PartialObjectMetadata{}, 0, newObjectStore().GetIndexers())
	if err := informer.SetTransform(transform); err != nil {
		t.Fatal(err)
	}
	owners := newOwnerIndex()
	w := &watch{gk: rdsGK, role: roleManaged, owners: owners}
	if _, err := informer.AddEventHandler(owners.handler(w)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("informer did not sync")
	}

	// indexed lists, by index value, the names the index holds, and what
	// the store says it should hold.
	indexed := func() (got, want map[string][]string) {
		got, want = map[string][]string{}, map[string][]string{}
		owners.mu.RLock()
		for index, m := range map[string]map[string][]indexed{indexOwner: owners.owners, indexClaim: owners.claims} {
			for value, es := range m {
				for _, e := range es {
					name := e.o.name()
					if stored, ok, _ := informer.GetStore().GetByKey(e.o.key()); e.w != w || !ok || stored != e.o {
						name += " (not the stored object)"
					}
					got[index+" "+value] = append(got[index+" "+value], name)
				}
			}
		}
		owners.mu.RUnlock()
		for _, item := range informer.GetStore().List() {
			o := item.(*object)
			if o.owner != "" {
				want[indexOwner+" "+o.owner] = append(want[indexOwner+" "+o.owner], o.name())
			}
			if c := claimOf(w, o); c != "" {
				want[indexClaim+" "+c] = append(want[indexClaim+" "+c], o.name())
			}
		}
		for _, m := range []map[string][]string{got, want} {
			for k := range m {
				slices.Sort(m[k])
			}
		}
		return got, want
	}
	agrees := func(when string) {
		t.Helper()
		var diff string
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			got, want := indexed()
			diff = cmp.Diff(want, got)
			return diff == "", nil
		})
		if err != nil {
			t.Fatalf("%s: the index differs from the store: -want, +got:\n%s", when, diff)
		}
	}
	agrees("after the first list")
	source.Add(mr("d", "x2", false))
	source.Modify(mr("a", "x2", false)) // a new owner
	source.Modify(mr("c", "x2", true))  // starts deleting: indexed by claim
	source.Delete(mr("b", "x1", true))
	agrees("after add, updates and delete")

	// Changes the watch never delivers, then a relist.
	source.AddDropWatch(mr("e", "x3", true))
	source.ModifyDropWatch(mr("d", "x3", false))
	source.DeleteDropWatch(mr("a", "x2", false))
	source.ResetWatch()
	agrees("after the relist")

	owners.drop(w)
	if len(owners.owners) != 0 || len(owners.claims) != 0 {
		t.Fatalf("a stopped watch left objects in the index: %v %v", owners.owners, owners.claims)
	}
	source.Add(mr("f", "x4", false))
	time.Sleep(50 * time.Millisecond)
	if got := owners.get(indexOwner, ownerKey(pgXRD.compositeGK(), "x4")); len(got) != 0 {
		t.Fatalf("a stopped watch's late event reached the index: %v", got)
	}
}

// TestObjectIDReadsBackWhatWasSet: namespace, name, resource version and
// external name share one string and read back exactly, whatever they
// hold, also after a setter of client-go's metav1.Object changes one.
func TestObjectIDReadsBackWhatWasSet(t *testing.T) {
	for _, tc := range []struct{ namespace, name, rv, ext string }{
		{"", "db", "7", ""}, {"default", "db", "123456", "prod-db"}, {"default", "db", "", "x"}, {"", "db", "", ""},
		{"", "a/b", "9", "a/b"}, {"", "", "1", ""}, {"default", "", "", ""}, {"", "/x", "x/", "/"}, {"default", "db", "1", "db"}, {"", "a/b", "", "a/b"},
	} {
		o := &object{}
		o.setID(tc.namespace, tc.name, tc.rv, tc.ext)
		if o.namespace() != tc.namespace || o.name() != tc.name || o.resourceVersion() != tc.rv || o.externalName() != tc.ext || o.key() != cacheKey(tc.namespace, tc.name) {
			t.Errorf("%+v reads back as namespace %q, name %q, resourceVersion %q, external name %q, key %q", tc, o.namespace(), o.name(), o.resourceVersion(), o.externalName(), o.key())
		}
		o.SetResourceVersion("42")
		if o.namespace() != tc.namespace || o.name() != tc.name || o.resourceVersion() != "42" || o.externalName() != tc.ext {
			t.Errorf("%+v after SetResourceVersion(42) reads back as namespace %q, name %q, resourceVersion %q, external name %q", tc, o.namespace(), o.name(), o.resourceVersion(), o.externalName())
		}
		if got, err := cache.MetaNamespaceKeyFunc(o); err != nil || got != o.key() {
			t.Errorf("%+v: client-go keys it %q (%v), claimguard %q", tc, got, err, o.key())
		}
	}
}

// TestLookupsAnswerFromTheStore: the index follows the store a moment
// late; until its handler has run, a lookup answers what the store holds,
// not what the index remembers.
func TestLookupsAnswerFromTheStore(t *testing.T) {
	names := func(fs []found) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.name()+" "+f.externalName())
		}
		return out
	}
	c := newCluster().managed(rdsGK, rdsGVR, false, stateSynced,
		mr("db-a", composedByPG("db"), externalName("a")), mr("db-b", composedByPG("db"), externalName("b")), mr("db-c", composedByPG("db"), externalName("c")))
	w := c.s.all[0]
	// The store drops db-a, moves db-b to another owner and updates db-c,
	// and no handler has run yet.
	if err := w.indexer.Delete(mr("db-a", composedByPG("db"))); err != nil {
		t.Fatal(err)
	}
	for _, o := range []*object{mr("db-b", composedByPG("other"), externalName("b")), mr("db-c", composedByPG("db"), externalName("c2"))} {
		if err := w.indexer.Update(o); err != nil {
			t.Fatal(err)
		}
	}
	got := names(c.s.acrossKinds(indexOwner, ownerKey(pgXRD.compositeGK(), "db"), &coverage{}))
	if diff := cmp.Diff([]string{"db-c c2"}, got); diff != "" {
		t.Errorf("composed by db: -want, +got:\n%s", diff)
	}
}
