package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// kubeControllers are the identities kube-controller-manager's controllers
// write as in an environment started with Options.ControllerManager.
var kubeControllers = []string{
	harness.ControllerManagerUser("generic-garbage-collector"),
	harness.ControllerManagerUser("namespace-controller"),
	harness.ControllerManagerUser("deployment-controller"),
	harness.ControllerManagerUser("replicaset-controller"),
}

// TestClaimguardForegroundDeletionByTheGarbageCollector runs claimguard's
// scenario against Kubernetes' real garbage collector (kube-controller-
// manager, in an environment of its own, whose audit log holds only this
// scenario's writes): a claim's XR composing two MRs,
// each owned by the XR with blockOwnerDeletion and held by the provider's
// finalizer, is deleted with Foreground propagation as Crossplane's claim
// controller does. The garbage collector, not the test, deletes the MRs and,
// once the provider has released them, finishes the XR. While it deletes, a
// new claim and a new XR of the same name are refused with the MRs listed;
// afterwards the claim is created. None of the controllers' writes is
// refused.
func TestClaimguardForegroundDeletionByTheGarbageCollector(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	started := time.Now()
	gc, err := harness.StartWith(ctx, harness.Options{ControllerManager: true})
	if err != nil {
		t.Fatalf("starting an API server with kube-controller-manager: %v", err)
	}
	t.Cleanup(gc.Stop)
	if _, err := gc.StartSteward(ctx, harness.DefaultConfig); err != nil {
		t.Fatalf("starting steward: %v", err)
	}
	gc.LogOnFailure(t)
	t.Logf("the API server, kube-controller-manager and Steward started in %s", time.Since(started).Round(time.Millisecond))

	// The claim exists, with compositeDeletePolicy Foreground; Crossplane
	// created its XR and composed two MRs. The XR carries no finalizer of
	// Crossplane's, so that the garbage collector alone finishes it.
	kubectlOKOn(t, ctx, gc, pgClaimY, "--as", "jane", "create", "-f", "-")
	const xrName = "db-gc4t7"
	mrs := []struct{ name, external string }{{xrName + "-prmry", "gc-db-primary"}, {xrName + "-rplca", "gc-db-replica"}}
	xr := createUnstructuredOn(t, ctx, gc, `apiVersion: database.example.org/v1alpha1
kind: XPostgreSQLInstance
metadata:
  name: `+xrName+`
  labels: {crossplane.io/claim-name: db, crossplane.io/claim-namespace: default}
spec:
  claimRef: {apiVersion: database.example.org/v1alpha1, kind: PostgreSQLInstance, namespace: default, name: db}
  resourceRefs:
  - {apiVersion: postgresql.sql.crossplane.io/v1alpha1, kind: Database, name: `+mrs[0].name+`}
  - {apiVersion: postgresql.sql.crossplane.io/v1alpha1, kind: Database, name: `+mrs[1].name+`}
`)
	for _, mr := range mrs {
		kubectlOKOn(t, ctx, gc, composedDB(mr.name, "database.example.org/v1alpha1", "XPostgreSQLInstance", xrName, xr.GetUID(), mr.external, "", true),
			"--as", crossplaneUser, "create", "-f", "-")
	}

	// The claim goes (no Crossplane runs to hold it), and Crossplane's claim
	// controller deletes the XR with the claim's Foreground policy.
	kubectlOKOn(t, ctx, gc, "", "--as", "jane", "delete", "postgresqlinstance", "db", "-n", "default", "--wait=false")
	kubectlOKOn(t, ctx, gc, "", "--as", crossplaneUser, "delete", "xpostgresqlinstance", xrName, "--cascade=foreground", "--wait=false")

	// The API server marks the XR foregroundDeletion; the garbage collector
	// deletes its dependents, which the provider's finalizer keeps.
	get := func(gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, gc.Client.Get(ctx, client.ObjectKey{Name: name}, u)
	}
	harness.Eventually(t, claimguardTimeout, func() error {
		cur, err := get(pgXRGVK, xrName)
		if err != nil {
			return err
		}
		if cur.GetDeletionTimestamp() == nil || !slices.Contains(cur.GetFinalizers(), "foregroundDeletion") {
			return fmt.Errorf("XR %s: deletionTimestamp %v, finalizers %v; want it deleting in the foreground", xrName, cur.GetDeletionTimestamp(), cur.GetFinalizers())
		}
		for _, mr := range mrs {
			cur, err := get(legacyDBGVK, mr.name)
			if err != nil {
				return err
			}
			if cur.GetDeletionTimestamp() == nil {
				return fmt.Errorf("the garbage collector has not deleted MR %s yet", mr.name)
			}
		}
		return nil
	})

	// Re-created while the XR still deletes: the claim and Crossplane's new
	// XR for it are refused, with the MRs that hold it.
	waitGuardedOn(t, ctx, gc, pgClaimY)
	refusedByOn(t, ctx, gc, claimguardHook, pgClaimY, []string{"--as", "jane", "apply", "-f", "-"},
		"claimguard: PostgreSQLInstance default/db cannot be created yet: XPostgreSQLInstance "+xrName+", the composite resource of the previous claim default/db, has been deleting for ",
		" and is still held by 2 composed resources: ",
		`Database `+mrs[0].name+` (external name "`+mrs[0].external+`"; deleting for `,
		`Database `+mrs[1].name+` (external name "`+mrs[1].external+`"; deleting for `,
		"; finalizers: "+mrFinalizer+")",
		"Retry once XPostgreSQLInstance "+xrName+" is gone (kubectl get xpostgresqlinstances.database.example.org "+xrName+").")
	refusedByOn(t, ctx, gc, claimguardHook, `apiVersion: database.example.org/v1alpha1
kind: XPostgreSQLInstance
metadata:
  name: db-n3w22
  labels: {crossplane.io/claim-name: db, crossplane.io/claim-namespace: default}
spec: {claimRef: {apiVersion: database.example.org/v1alpha1, kind: PostgreSQLInstance, namespace: default, name: db}}
`, []string{"--as", crossplaneUser, "create", "-f", "-"},
		"claimguard: XPostgreSQLInstance db-n3w22 for claim default/db cannot be created yet: XPostgreSQLInstance "+xrName+" of the same claim has been deleting for ")

	// The provider has deleted the external databases and releases the MRs;
	// the garbage collector then finishes the XR by itself.
	for _, mr := range mrs {
		dropFinalizersOn(t, ctx, gc, legacyDBGVK, "", mr.name)
	}
	harness.Eventually(t, claimguardTimeout, func() error {
		cur, err := get(pgXRGVK, xrName)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("XR %s is still there (finalizers %v)", xrName, cur.GetFinalizers())
	})
	harness.Eventually(t, claimguardTimeout, func() error {
		_, _, err := gc.Kubectl(ctx, pgClaimY, "--as", "jane", "apply", "-f", "-")
		return err
	})

	// The audit log: the garbage collector deleted both MRs and removed
	// foregroundDeletion from the XR, and Steward refused none of the
	// controllers' writes.
	garbageCollector := harness.ControllerManagerUser("generic-garbage-collector")
	want := []string{"patch xpostgresqlinstances " + xrName + " by " + garbageCollector}
	for _, mr := range mrs {
		want = append(want, "delete databases "+mr.name+" by "+garbageCollector)
	}
	wantWritesAllowed(t, gc, "kube-controller-manager's controllers", func(ev harness.AuditEvent) bool {
		return slices.Contains(kubeControllers, ev.User.Username)
	}, want)
}
