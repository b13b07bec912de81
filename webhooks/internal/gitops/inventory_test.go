package gitops

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestInventoryHasExactlyItsEntries(t *testing.T) {
	ids := []string{
		InventoryID("apps", "podinfo", "apps", "Deployment"),
		InventoryID("apps", "podinfo", "", "Service"),
		InventoryID("", "apps", "", "Namespace"),
		InventoryID("", "system:aggregate", "rbac.authorization.k8s.io", "ClusterRole"),
		InventoryID("apps", "podinfo", "apps", "Deployment"), // a duplicate
	}
	inv := NewInventory(ids)
	if inv.Len() != 4 {
		t.Errorf("Len = %d, want 4 (the duplicate once)", inv.Len())
	}
	for _, id := range ids {
		if !inv.Has(id) {
			t.Errorf("Has(%q) = false, want true", id)
		}
	}
	for _, id := range []string{"", "apps_podinfo_apps_Deploymen", "apps_podinfo_apps_Deployment2", "_system:aggregate_rbac.authorization.k8s.io_ClusterRole", "zzz"} {
		if inv.Has(id) {
			t.Errorf("Has(%q) = true, want false", id)
		}
	}
	if got, want := ids[3], "_system__aggregate_rbac.authorization.k8s.io_ClusterRole"; got != want {
		t.Errorf("an RBAC name's ':' is written %q, want %q as Flux writes it", got, want)
	}
	if (Inventory{}).Has("x") {
		t.Error("the empty inventory has an entry")
	}
}

func TestInventoryMatchesAMapOfItsIDs(t *testing.T) {
	var ids []string
	want := map[string]bool{}
	for i := 0; i < 500; i += 3 {
		id := fmt.Sprintf("ns%d_obj%d__ConfigMap", i%7, i)
		ids = append(ids, id)
		want[id] = true
	}
	inv := NewInventory(ids)
	for i := 0; i < 500; i++ {
		id := fmt.Sprintf("ns%d_obj%d__ConfigMap", i%7, i)
		if inv.Has(id) != want[id] {
			t.Fatalf("Has(%q) = %v, want %v", id, inv.Has(id), want[id])
		}
	}
}

func TestDistinctKinds(t *testing.T) {
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	ks := schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
	ksOld := schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1beta2", Kind: "Kustomization"}
	got := DistinctKinds([]schema.GroupVersionKind{ks, deploy, cm, deploy, ksOld, cm})
	want := []schema.GroupVersionKind{cm, deploy, ks, ksOld}
	if !slices.Equal(got, want) || cap(got) != len(got) {
		t.Errorf("DistinctKinds(...) = %v (cap %d), want %v", got, cap(got), want)
	}
	if DistinctKinds(nil) != nil {
		t.Error("DistinctKinds(nil) is not nil")
	}
}

// TestDistinctKindsKeepsOnlyTheKinds: an owner's record holds thousands
// of entries of a few kinds, and the cache keeps the kinds for as long as
// the owner; the entries' array must not stay behind them.
func TestDistinctKindsKeepsOnlyTheKinds(t *testing.T) {
	entries := make([]schema.GroupVersionKind, 10000)
	for i := range entries {
		entries[i] = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: []string{"Deployment", "StatefulSet"}[i%2]}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := DistinctKinds(entries)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	runtime.KeepAlive(entries)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 64<<10 {
		t.Errorf("DistinctKinds of %d entries of 2 kinds keeps %d bytes alive: the entries' array stays behind the kinds", len(entries), grown)
	}
}

func TestInventoryGroupKind(t *testing.T) {
	for _, c := range []struct{ namespace, name, group, kind string }{
		{"apps", "podinfo", "apps", "Deployment"},
		{"apps", "podinfo", "", "Service"},
		{"", "system:aggregate", "rbac.authorization.k8s.io", "ClusterRole"},
	} {
		g, k, ok := InventoryGroupKind(InventoryID(c.namespace, c.name, c.group, c.kind))
		if !ok || g != c.group || k != c.kind {
			t.Errorf("InventoryGroupKind(%q) = %q, %q, %v; want %q, %q", InventoryID(c.namespace, c.name, c.group, c.kind), g, k, ok, c.group, c.kind)
		}
	}
	for _, id := range []string{"", "Deployment", "apps_", "a_b_"} {
		if g, k, ok := InventoryGroupKind(id); ok {
			t.Errorf("InventoryGroupKind(%q) = %q, %q, true; want false", id, g, k)
		}
	}
}

func TestHasObjectIsHasOfTheID(t *testing.T) {
	inv := NewInventory([]string{
		InventoryID("apps", "podinfo", "apps", "Deployment"),
		InventoryID("", "system:aggregate", "rbac.authorization.k8s.io", "ClusterRole"),
	})
	for _, c := range []struct {
		ns, name, group, kind string
		want                  bool
	}{
		{"apps", "podinfo", "apps", "Deployment", true},
		{"", "system:aggregate", "rbac.authorization.k8s.io", "ClusterRole", true},
		{"apps", "podinfo", "", "Deployment", false},
		{"apps", "podinf", "apps", "Deployment", false},
		{"", "system:aggregated", "rbac.authorization.k8s.io", "ClusterRole", false},
	} {
		if got := inv.HasObject(c.ns, c.name, c.group, c.kind); got != c.want || got != inv.Has(InventoryID(c.ns, c.name, c.group, c.kind)) {
			t.Errorf("HasObject(%q, %q, %q, %q) = %v, want %v, as Has of the id", c.ns, c.name, c.group, c.kind, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { inv.HasObject("apps", "podinfo", "apps", "Deployment") }); n != 0 {
		t.Errorf("HasObject allocates %v times a call, want 0", n)
	}
}
