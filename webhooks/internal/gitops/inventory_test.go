package gitops

import (
	"fmt"
	"testing"
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
