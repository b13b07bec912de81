package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const advOLMNS = "adversary-olm"

// TestAdversarialInstallPlanGuard runs the two-step deletes of an in-flight
// InstallPlan: each first step would make the plan one the rule no longer
// protects, so each is refused, and the plan survives.
func TestAdversarialInstallPlanGuard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: advOLMNS}}); err != nil {
		t.Fatal(err)
	}
	sub := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": olmAPIVersion, "kind": "Subscription",
		"metadata": map[string]any{"name": "etcd", "namespace": advOLMNS},
		"spec":     map[string]any{"channel": "singlenamespace-alpha", "name": "etcd", "source": ipgCatalog, "sourceNamespace": "olm"},
	}}
	if err := env.Client.Create(ctx, sub); err != nil {
		t.Fatal(err)
	}
	// OLM creates the plans and moves their phases; the harness's admin
	// stands in for it.
	for name, phase := range map[string]string{"install-a": "Installing", "install-b": "RequiresApproval"} {
		plan := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": olmAPIVersion, "kind": "InstallPlan",
			"metadata": map[string]any{"name": name, "namespace": advOLMNS},
			"spec":     map[string]any{"approval": "Manual", "approved": phase == "Installing", "clusterServiceVersionNames": []any{ipgCSV}},
		}}
		plan.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: olmAPIVersion, Kind: "Subscription", Name: "etcd", UID: sub.GetUID()}})
		if err := env.Client.Create(ctx, plan); err != nil {
			t.Fatal(err)
		}
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{"phase": phase, "catalogSources": []any{ipgCatalog}}})
		if err := env.Client.Status().Patch(ctx, plan, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	mallory, err := env.As(adversary)
	if err != nil {
		t.Fatal(err)
	}
	in := func(args ...string) []string { return append([]string{"-n", advOLMNS}, args...) }
	const (
		inFlight = "installplanguard: InstallPlan " + advOLMNS + "/"
		deleting = "Refused: delete."
		phase    = "Refused: status.phase from "
		dropped  = "Refused: removing the owner reference to Subscription " + advOLMNS + "/etcd."
	)

	runChains(ctx, t, []chain{{
		name: "RewriteThePhaseThroughStatusThenDelete",
		steps: []step{
			{what: "mark the installing plan Complete through /status", refused: phase + "Installing to Complete.",
				kubectl: in("patch", "installplan", "install-a", "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Complete"}}`)},
			{what: "mark the plan awaiting approval Failed through /status", refused: phase + "RequiresApproval to Failed.",
				kubectl: in("patch", "installplan", "install-b", "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Failed"}}`)},
			{what: "delete it", refused: deleting, kubectl: in("delete", "installplan", "install-a", "--wait=false")},
		},
	}, {
		name: "DropTheOwningSubscriptionThenDelete",
		steps: []step{
			{what: "remove the ownerReferences", refused: dropped,
				kubectl: in("patch", "installplan", "install-b", "--type=json", "-p", `[{"op":"remove","path":"/metadata/ownerReferences"}]`)},
			{what: "point the owner reference at another uid", refused: dropped,
				kubectl: in("patch", "installplan", "install-a", "--type=json", "-p", `[{"op":"replace","path":"/metadata/ownerReferences/0/uid","value":"00000000-0000-0000-0000-000000000000"}]`)},
			{what: "delete it", refused: deleting, kubectl: in("delete", "installplan", "install-b", "--wait=false")},
		},
	}, {
		name: "CollectionDeletes",
		steps: []step{
			{what: "DeleteCollection of the namespace's InstallPlans", refused: inFlight, do: func(ctx context.Context) error {
				list := &unstructured.Unstructured{}
				list.SetAPIVersion(olmAPIVersion)
				list.SetKind("InstallPlan")
				return mallory.DeleteAllOf(ctx, list, client.InNamespace(advOLMNS))
			}},
			{what: "kubectl delete --all", refused: deleting, kubectl: in("delete", "installplans", "--all", "--wait=false")},
		},
	}, {
		name: "WhatTheRuleAllows",
		steps: []step{
			{what: "approve the plan awaiting approval", allowed: "approving is how a Manual plan moves on",
				kubectl: in("patch", "installplan", "install-b", "--type=merge", "-p", `{"spec":{"approved":true}}`)},
			{what: "label a plan", allowed: "labels do not change what makes a plan in flight",
				kubectl: in("label", "installplan", "install-a", "team=db")},
		},
	}})

	t.Run("ThePlansAreUnchanged", func(t *testing.T) {
		for name, want := range map[string]string{"install-a": "Installing", "install-b": "RequiresApproval"} {
			plan := &unstructured.Unstructured{}
			plan.SetAPIVersion(olmAPIVersion)
			plan.SetKind("InstallPlan")
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: advOLMNS, Name: name}, plan); err != nil {
				t.Fatalf("InstallPlan %s: %v", name, err)
			}
			got, _, _ := unstructured.NestedString(plan.Object, "status", "phase")
			if got != want || len(plan.GetOwnerReferences()) != 1 || plan.GetOwnerReferences()[0].UID != sub.GetUID() {
				t.Errorf("InstallPlan %s: phase %q, owners %v; want %s, owned by Subscription etcd (%s)", name, got, plan.GetOwnerReferences(), want, sub.GetUID())
			}
		}
	})
}
