package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

const (
	ipgNS          = "olm-apps"
	ipgPath        = "/validate/installplanguard"
	ipgHook        = `admission webhook "installplanguard.steward.dev" denied the request: `
	olmOperator    = "system:serviceaccount:olm:olm-operator-serviceaccount"
	gcController   = "system:serviceaccount:kube-system:generic-garbage-collector"
	olmAPIVersion  = "operators.coreos.com/v1alpha1"
	ipgInstalling  = "install-etcd-1"
	ipgCSV         = "etcdoperator.v0.9.4"
	ipgCatalog     = "operatorhubio-catalog"
	ipgWebhookName = "installplanguard.steward.dev"
)

// olmObject builds an OLM object in the test namespace.
func ipgObject(kind, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": olmAPIVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": ipgNS},
		"spec":       spec,
	}}
}

// createPlan creates an InstallPlan owned by the Subscription and writes
// its status through the status subresource, as OLM does: OLM's schema
// requires the catalog sources the plan was resolved from with the phase.
func ipgCreatePlan(ctx context.Context, t *testing.T, name, phase string, approved bool, owner *unstructured.Unstructured) {
	t.Helper()
	plan := ipgObject("InstallPlan", name, map[string]any{
		"approval":                   "Manual",
		"approved":                   approved,
		"clusterServiceVersionNames": []any{ipgCSV},
	})
	if owner != nil {
		plan.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: olmAPIVersion, Kind: "Subscription", Name: owner.GetName(), UID: owner.GetUID()}})
	}
	if err := env.Client.Create(ctx, plan); err != nil {
		t.Fatalf("creating InstallPlan %s: %v", name, err)
	}
	ipgSetStatus(ctx, t, plan, map[string]any{"phase": phase, "catalogSources": []any{ipgCatalog}})
}

// ipgSetStatus writes status as OLM's service account: only OLM moves a
// plan through its phases.
func ipgSetStatus(ctx context.Context, t *testing.T, obj *unstructured.Unstructured, status map[string]any) {
	t.Helper()
	olm, err := env.As(olmOperator)
	if err != nil {
		t.Fatal(err)
	}
	patch, _ := json.Marshal(map[string]any{"status": status})
	if err := olm.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("writing the status of %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// kubeAPICounter sums a counter of the API server's own /metrics over the
// samples whose labels include labels.
func kubeAPICounter(ctx context.Context, t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := env.APIServerMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return harness.SumFamilies(families, name, labels)
}

// celErrors is how often the API server failed to evaluate a
// webhook's matchConditions: with failurePolicy Fail that refuses the
// request, with Ignore it silently skips Steward, so it must stay 0.
func celErrors(ctx context.Context, t *testing.T, webhook string) float64 {
	t.Helper()
	return kubeAPICounter(ctx, t, "apiserver_admission_match_condition_evaluation_errors_total", map[string]string{"name": webhook})
}

// celExclusions is how many requests a webhook's matchConditions
// kept inside the API server.
func celExclusions(ctx context.Context, t *testing.T, webhook string) float64 {
	t.Helper()
	return kubeAPICounter(ctx, t, "apiserver_admission_match_condition_exclusions_total", map[string]string{"name": webhook})
}

// TestInstallPlanGuard proves installplanguard through the real API server
// and kubectl: a user cannot delete or un-approve an in-flight plan and is
// told why and what to do instead; OLM and the garbage collector can, without
// Steward ever being called; Complete plans are free to go; a Subscription's
// approval change under an installing plan is allowed with a warning.
func TestInstallPlanGuard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ipgNS}}); err != nil {
		t.Fatal(err)
	}
	sub := ipgObject("Subscription", "etcd", map[string]any{
		"channel": "singlenamespace-alpha", "name": "etcd", "source": ipgCatalog, "sourceNamespace": "olm",
		"installPlanApproval": "Manual",
	})
	if err := env.Client.Create(ctx, sub); err != nil {
		t.Fatal(err)
	}
	ipgCreatePlan(ctx, t, ipgInstalling, "Installing", true, sub)
	ipgSetStatus(ctx, t, sub, map[string]any{
		"lastUpdated":    time.Now().UTC().Format(time.RFC3339),
		"state":          "UpgradePending",
		"installPlanRef": map[string]any{"apiVersion": olmAPIVersion, "kind": "InstallPlan", "name": ipgInstalling, "namespace": ipgNS},
	})
	errorsBefore := celErrors(ctx, t, ipgWebhookName) + celErrors(ctx, t, "installplanguard-subscriptions.steward.dev")

	t.Run("UserDeleteOfInstallingPlanIsDeniedWithTheMessage", func(t *testing.T) {
		want := "installplanguard: InstallPlan olm-apps/install-etcd-1 is Installing and owned by Subscription olm-apps/etcd; deleting it while OLM is still working on it leaves the Subscription InstallPlanMissing or stuck. Refused: delete. Instead, wait until it is Complete or Failed, or delete Subscription olm-apps/etcd to cancel the install (the garbage collector then removes the plan)."
		for _, dryRun := range []string{"--dry-run=server", "--dry-run=none"} {
			_, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ipgNS, "delete", "installplan", ipgInstalling, dryRun)
			if err == nil || !strings.Contains(err.Error(), ipgHook+want) {
				t.Fatalf("kubectl delete %s: %v\nwant the denial:\n%s", dryRun, err, want)
			}
		}
	})

	t.Run("UnapprovingWhileInstallingIsDenied", func(t *testing.T) {
		want := "installplanguard: InstallPlan olm-apps/install-etcd-1 is Installing and owned by Subscription olm-apps/etcd; changing what it installs or withdrawing its approval mid-install leaves the Subscription stuck. Refused: spec.approved from true to false. Instead, let the install finish (Complete or Failed); to hold back future upgrades set spec.installPlanApproval: Manual on the Subscription, or delete Subscription olm-apps/etcd to cancel the install."
		_, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ipgNS, "patch", "installplan", ipgInstalling, "--type=merge", "-p", `{"spec":{"approved":false}}`)
		if err == nil || !strings.Contains(err.Error(), ipgHook+want) {
			t.Fatalf("kubectl patch: %v\nwant the denial:\n%s", err, want)
		}
		// Labelling the plan changes neither approval nor CSVs, and the
		// matchConditions keep it from Steward.
		before := pathCalls(t, ipgPath)
		if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ipgNS, "label", "installplan", ipgInstalling, "team=db"); err != nil {
			t.Fatalf("labelling an installing plan: %v", err)
		}
		if after := pathCalls(t, ipgPath); after != before {
			t.Errorf("a label change reached Steward %v times; it must not", after-before)
		}
	})

	t.Run("ApprovalChangeWhileInstallingWarns", func(t *testing.T) {
		want := "Warning: installplanguard: Subscription olm-apps/etcd changes spec.installPlanApproval from Manual to Automatic while its InstallPlan olm-apps/install-etcd-1 is Installing; the change applies to the next InstallPlan, not to the one in flight."
		// Steward's InstallPlan cache sees the Installing phase a moment
		// after it was written; until then the change passes silently, so
		// the test puts Manual back and tries again.
		harness.Eventually(t, 20*time.Second, func() error {
			if _, _, err := env.Kubectl(ctx, "", "-n", ipgNS, "patch", "subscription", "etcd", "--type=merge", "-p", `{"spec":{"installPlanApproval":"Manual"}}`); err != nil {
				return err
			}
			_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ipgNS, "patch", "subscription", "etcd", "--type=merge", "-p", `{"spec":{"installPlanApproval":"Automatic"}}`)
			if err != nil {
				return fmt.Errorf("the change must be allowed: %w", err)
			}
			if !strings.Contains(stderr, want) {
				return fmt.Errorf("kubectl's warnings:\n%s\nwant:\n%s", stderr, want)
			}
			return nil
		})
	})

	t.Run("OLMDeletesItsInstallingPlanWithoutCallingSteward", func(t *testing.T) {
		calls := pathCalls(t, ipgPath)
		excluded := celExclusions(ctx, t, ipgWebhookName)
		if _, _, err := env.Kubectl(ctx, "", "--as", olmOperator, "-n", ipgNS, "delete", "installplan", ipgInstalling); err != nil {
			t.Fatalf("OLM deletes its plan: %v", err)
		}
		if after := pathCalls(t, ipgPath); after != calls {
			t.Errorf("OLM's delete reached Steward %v times; matchConditions must keep it away", after-calls)
		}
		if after := celExclusions(ctx, t, ipgWebhookName); after <= excluded {
			t.Errorf("the API server's match-condition exclusions for %s did not grow (%v)", ipgWebhookName, after)
		}
	})

	t.Run("UserDeletesCompletePlan", func(t *testing.T) {
		ipgCreatePlan(ctx, t, "install-etcd-2", "Installing", true, sub)
		if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ipgNS, "delete", "installplan", "install-etcd-2", "--dry-run=server"); err == nil {
			t.Fatal("deleting an Installing plan must be refused before it completes")
		}
		ipgSetStatus(ctx, t, ipgObject("InstallPlan", "install-etcd-2", nil), map[string]any{"phase": "Complete"})
		if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ipgNS, "delete", "installplan", "install-etcd-2"); err != nil {
			t.Fatalf("deleting a Complete plan: %v", err)
		}
	})

	t.Run("GarbageCollectorDeletesPlanningPlan", func(t *testing.T) {
		ipgCreatePlan(ctx, t, "install-etcd-3", "Planning", false, sub)
		if _, _, err := env.Kubectl(ctx, "", "--as", gcController, "-n", ipgNS, "delete", "installplan", "install-etcd-3"); err != nil {
			t.Fatalf("the garbage collector deletes a plan whose Subscription is gone: %v", err)
		}
	})

	t.Run("PlansWithMissingFieldsNeverFailTheMatchConditions", func(t *testing.T) {
		// The webhook fails closed: a match condition that errored on a
		// missing field would refuse these requests. OLM's schemas require
		// a plan's and a Subscription's spec, so what may be missing is
		// the status, the owners and the optional spec fields.
		bare := ipgObject("InstallPlan", "bare", map[string]any{"approval": "Automatic", "approved": false, "clusterServiceVersionNames": []any{}})
		if err := env.Client.Create(ctx, bare); err != nil {
			t.Fatal(err)
		}
		if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ipgNS, "label", "installplan", "bare", "a=b"); err != nil {
			t.Fatalf("updating a plan without status or owner: %v", err)
		}
		if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ipgNS, "delete", "installplan", "bare"); err != nil {
			t.Fatalf("deleting a plan without status or owner: %v", err)
		}
		bareSub := ipgObject("Subscription", "bare", map[string]any{"name": "bare", "source": ipgCatalog, "sourceNamespace": "olm"})
		if err := env.Client.Create(ctx, bareSub); err != nil {
			t.Fatal(err)
		}
		if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ipgNS, "patch", "subscription", "bare", "--type=merge", "-p", `{"spec":{"installPlanApproval":"Manual"}}`); err != nil {
			t.Fatalf("updating a Subscription without status or approval: %v", err)
		}
		after := celErrors(ctx, t, ipgWebhookName) + celErrors(ctx, t, "installplanguard-subscriptions.steward.dev")
		if after != errorsBefore {
			t.Errorf("the API server failed to evaluate installplanguard's matchConditions %v times", after-errorsBefore)
		}
	})
}
