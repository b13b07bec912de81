package claimguard

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
)

// TestObjectCountFollowsTheStore runs a real informer over a fake source
// and checks the count kept from its events against the store's own keys,
// through adds, updates, deletes and a relist that missed changes (a
// dropped watch: the informer learns of them only from the new list).
func TestObjectCountFollowsTheStore(t *testing.T) {
	source := fcache.NewFakeControllerSource()
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps"}}
	}
	source.Add(pod("a"))
	source.Add(pod("b"))
	informer := cache.NewSharedIndexInformer(source, &corev1.Pod{}, 0, cache.Indexers{})
	count := &objectCount{}
	if _, err := informer.AddEventHandler(count.handler()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	agrees := func(when string, want int) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			return count.get() == want && len(informer.GetStore().ListKeys()) == want, nil
		})
		if err != nil {
			t.Fatalf("%s: counted %d, the store holds %d, want %d", when, count.get(), len(informer.GetStore().ListKeys()), want)
		}
	}
	agrees("after the first list", 2)
	source.Add(pod("c"))
	source.Modify(pod("a"))
	source.Delete(pod("b"))
	agrees("after add, update and delete", 2)

	// Changes the watch never delivers, then a relist.
	source.AddDropWatch(pod("d"))
	source.AddDropWatch(pod("e"))
	source.DeleteDropWatch(pod("a"))
	source.ResetWatch()
	agrees("after the relist", 3)
}
