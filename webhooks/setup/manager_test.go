package setup

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestManagerCacheKeepsNoNamespaceIndex: the manager cache's informers
// leave out the namespace index controller-runtime asks for, and keep any
// other index a reader adds.
func TestManagerCacheKeepsNoNamespaceIndex(t *testing.T) {
	byName := func(obj any) ([]string, error) { return []string{obj.(metav1.Object).GetName()}, nil }
	inf := NewInformer(&toolscache.ListWatch{}, &metav1.PartialObjectMetadata{}, 0, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
		"byName":                  byName,
	})
	got := inf.GetIndexer().GetIndexers()
	if _, ok := got[toolscache.NamespaceIndex]; ok {
		t.Error("the informer keeps the namespace index: an entry per cached object that nothing reads")
	}
	if _, ok := got["byName"]; !ok || len(got) != 1 {
		t.Errorf("indexers = %v, want only byName", got)
	}
}
