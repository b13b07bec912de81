//go:build crossplane

// The Crossplane scenario needs Crossplane's core, whose cold build takes
// about an hour here: it runs only under the build tag crossplane, through
// make e2e-crossplane, never in make test or make e2e.

package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

const (
	realXPNS    = "realxp"
	realXPGroup = "xp.steward.example.org"
	// realXPTimeout bounds each wait on Crossplane, the provider and the
	// garbage collector: each step takes seconds.
	realXPTimeout = 2 * time.Minute
	// realXPPaused is the annotation that stops Crossplane's managed
	// reconciler (here provider-nop's) from acting on an MR: a paused MR
	// being deleted keeps its finalizer, so its XR and claim stay deleting
	// until the test un-pauses it.
	realXPPaused = "crossplane.io/paused"
)

var (
	realXPXRGVK        = schema.GroupVersionKind{Group: realXPGroup, Version: "v1alpha1", Kind: "XDatabase"}
	realXPClaimGVK     = schema.GroupVersionKind{Group: realXPGroup, Version: "v1alpha1", Kind: "Database"}
	realXPCacheGVK     = schema.GroupVersionKind{Group: realXPGroup, Version: "v1alpha1", Kind: "XCache"}
	realXPClusterNopGV = schema.GroupVersionKind{Group: "nop.crossplane.io", Version: "v1alpha1", Kind: "ClusterNopResource"}
	realXPNopGVK       = schema.GroupVersionKind{Group: "nop.crossplane.io", Version: "v1alpha1", Kind: "NopResource"}
)

// realXPDefinitions are two XRDs and their Compositions, both in Pipeline
// mode through function-patch-and-transform: XDatabase, a legacy
// cluster-scoped XR (a v1 XRD: Crossplane 2.3's v2 XRDs serve Namespaced
// and Cluster XRs only, without claims) with the claim Database, composing two
// ClusterNopResources whose external names come from the claim; and XCache,
// a v2 namespaced XR without claims, composing one NopResource.
const realXPDefinitions = `apiVersion: apiextensions.crossplane.io/v1
kind: CompositeResourceDefinition
metadata: {name: xdatabases.xp.steward.example.org}
spec:
  group: xp.steward.example.org
  names: {kind: XDatabase, plural: xdatabases}
  claimNames: {kind: Database, plural: databases}
  defaultCompositionRef: {name: xdatabases}
  versions:
  - name: v1alpha1
    served: true
    referenceable: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              externalName: {type: string}
            required: [externalName]
---
apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata: {name: xdatabases}
spec:
  compositeTypeRef: {apiVersion: xp.steward.example.org/v1alpha1, kind: XDatabase}
  mode: Pipeline
  pipeline:
  - step: patch-and-transform
    functionRef: {name: function-patch-and-transform}
    input:
      apiVersion: pt.fn.crossplane.io/v1beta1
      kind: Resources
      resources:
      - name: primary
        base:
          apiVersion: nop.crossplane.io/v1alpha1
          kind: ClusterNopResource
          spec:
            forProvider:
              conditionAfter:
              - {conditionType: Ready, conditionStatus: "True", time: 0s}
        patches:
        - type: FromCompositeFieldPath
          fromFieldPath: spec.externalName
          toFieldPath: metadata.annotations[crossplane.io/external-name]
          transforms:
          - {type: string, string: {type: Format, fmt: "%s-primary"}}
      - name: replica
        base:
          apiVersion: nop.crossplane.io/v1alpha1
          kind: ClusterNopResource
          spec:
            forProvider:
              conditionAfter:
              - {conditionType: Ready, conditionStatus: "True", time: 0s}
        patches:
        - type: FromCompositeFieldPath
          fromFieldPath: spec.externalName
          toFieldPath: metadata.annotations[crossplane.io/external-name]
          transforms:
          - {type: string, string: {type: Format, fmt: "%s-replica"}}
---
apiVersion: apiextensions.crossplane.io/v2
kind: CompositeResourceDefinition
metadata: {name: xcaches.xp.steward.example.org}
spec:
  group: xp.steward.example.org
  scope: Namespaced
  names: {kind: XCache, plural: xcaches}
  defaultCompositionRef: {name: xcaches}
  versions:
  - name: v1alpha1
    served: true
    referenceable: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              externalName: {type: string}
            required: [externalName]
---
apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata: {name: xcaches}
spec:
  compositeTypeRef: {apiVersion: xp.steward.example.org/v1alpha1, kind: XCache}
  mode: Pipeline
  pipeline:
  - step: patch-and-transform
    functionRef: {name: function-patch-and-transform}
    input:
      apiVersion: pt.fn.crossplane.io/v1beta1
      kind: Resources
      resources:
      - name: cache
        base:
          apiVersion: nop.crossplane.io/v1alpha1
          kind: NopResource
          spec:
            forProvider:
              conditionAfter:
              - {conditionType: Ready, conditionStatus: "True", time: 0s}
        patches:
        - type: FromCompositeFieldPath
          fromFieldPath: spec.externalName
          toFieldPath: metadata.annotations[crossplane.io/external-name]
`

const (
	realXPClaim = `apiVersion: xp.steward.example.org/v1alpha1
kind: Database
metadata: {name: db, namespace: realxp}
spec: {externalName: realxp-db, compositeDeletePolicy: Foreground}
`
	realXPCache = `apiVersion: xp.steward.example.org/v1alpha1
kind: XCache
metadata: {name: cache, namespace: realxp}
spec: {externalName: realxp-cache}
`
)

// TestRealCrossplane runs claimguard's scenarios against Crossplane's real
// core, function-patch-and-transform and provider-nop, with Kubernetes'
// real garbage collector, in an environment of its own (whose audit log
// holds only these scenarios' writes), Steward's rendered webhooks
// registered. Pausing an MR (crossplane.io/paused) keeps its finalizer
// while it is deleted, which holds its XR, and the XR's claim, in
// deletion for as long as the test wants.
func TestRealCrossplane(t *testing.T) {
	for _, v := range []string{"CROSSPLANE", "FUNCTION_PATCH_AND_TRANSFORM", "PROVIDER_NOP"} {
		if os.Getenv(v) == "" {
			t.Skipf("%s is not set: run through make e2e-crossplane, which builds Crossplane, function-patch-and-transform and provider-nop (make crossplane)", v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	started := time.Now()
	e, err := harness.StartWith(ctx, harness.Options{ControllerManager: true})
	if err != nil {
		t.Fatalf("starting an API server with kube-controller-manager: %v", err)
	}
	t.Cleanup(e.Stop)
	if _, err := e.StartSteward(ctx, harness.DefaultConfig); err != nil {
		t.Fatalf("starting steward: %v", err)
	}
	e.LogOnFailure(t)
	if _, err := e.StartCrossplane(ctx, t); err != nil {
		t.Fatalf("starting Crossplane: %v", err)
	}
	t.Logf("the API server, kube-controller-manager, Steward, Crossplane, function-patch-and-transform and provider-nop started in %s", time.Since(started).Round(time.Millisecond))
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: realXPNS}}); err != nil {
		t.Fatal(err)
	}
	kubectlOKOn(t, ctx, e, realXPDefinitions, "apply", "-f", "-")
	for _, xrd := range []string{"xdatabases." + realXPGroup, "xcaches." + realXPGroup} {
		harness.Eventually(t, realXPTimeout, func() error { return realXPXRDReady(ctx, e, xrd) })
	}

	// The garbage collector learns of new kinds by discovery, every 30 s,
	// and a Foreground deletion of an owner it processes before it has
	// listed the owner's dependents finishes at once, without waiting for
	// them. Provider-nop's kinds are new here: wait until it blocks on them.
	realXPWaitGCWatchesDependents(ctx, t, e)

	t.Run("ClaimRecreatedWhileItsXRDeletesIsRefused", func(t *testing.T) {
		kubectlOKOn(t, ctx, e, realXPClaim, "--as", "jane", "create", "-f", "-")
		var xr string
		harness.Eventually(t, realXPTimeout, func() error {
			claim, err := realXPGet(ctx, e, realXPClaimGVK, realXPNS, "db")
			if err != nil {
				return err
			}
			xr, _, _ = unstructured.NestedString(claim.Object, "spec", "resourceRef", "name")
			if xr == "" {
				return fmt.Errorf("the claim has no spec.resourceRef yet: Crossplane has not created its XR")
			}
			return nil
		})
		mrs := realXPComposed(ctx, t, e, realXPClusterNopGV, "", xr, map[string]string{"primary": "realxp-db-primary", "replica": "realxp-db-replica"})
		for _, mr := range mrs {
			realXPPause(ctx, t, e, "clusternopresource", "", mr.GetName(), true)
		}

		// A person deletes the claim in the foreground, as kubectl does;
		// Crossplane deletes its XR with the claim's Foreground policy and
		// keeps the claim until the XR is gone; the garbage collector
		// deletes the MRs, which their paused provider keeps.
		_, stderr := kubectlOKOn(t, ctx, e, "", "--as", "jane", "-n", realXPNS, "delete", "databases."+realXPGroup, "db", "--cascade=foreground", "--wait=false")
		t.Logf("kubectl delete of the claim printed: %s", strings.TrimSpace(stderr))
		harness.Eventually(t, realXPTimeout, func() error {
			cur, err := realXPGet(ctx, e, realXPXRGVK, "", xr)
			if err != nil {
				return err
			}
			if cur.GetDeletionTimestamp() == nil || !slices.Contains(cur.GetFinalizers(), "foregroundDeletion") {
				return fmt.Errorf("XR %s: deletionTimestamp %v, finalizers %v; want it deleting in the foreground", xr, cur.GetDeletionTimestamp(), cur.GetFinalizers())
			}
			for _, mr := range mrs {
				cur, err := realXPGet(ctx, e, realXPClusterNopGV, "", mr.GetName())
				if err != nil {
					return err
				}
				if cur.GetDeletionTimestamp() == nil {
					return fmt.Errorf("the garbage collector has not deleted MR %s yet", mr.GetName())
				}
			}
			return nil
		})
		claim, err := realXPGet(ctx, e, realXPClaimGVK, realXPNS, "db")
		if err != nil {
			t.Fatalf("the claim while its XR deletes in the foreground: %v (Crossplane keeps it until the XR is gone)", err)
		}
		t.Logf("while XR %s deletes: the claim is deleting since %v with finalizers %v", xr, claim.GetDeletionTimestamp(), claim.GetFinalizers())

		// Re-created while the XR still deletes (the claim itself is still
		// there, deleting: a create of its name reaches admission before
		// the API server's AlreadyExists): refused with the MRs that hold it.
		waitGuardedOn(t, ctx, e, realXPClaim, "databases."+realXPGroup, "xdatabases."+realXPGroup)
		parts := []string{
			"claimguard: Database " + realXPNS + "/db cannot be created yet: XDatabase " + xr + ", the composite resource of the previous claim " + realXPNS + "/db, has been deleting for ",
			" and is still held by 2 composed resources: ",
			"Retry once XDatabase " + xr + " is gone (kubectl get xdatabases." + realXPGroup + " " + xr + ").",
		}
		for _, mr := range mrs {
			parts = append(parts, fmt.Sprintf("ClusterNopResource %s (external name %q; deleting for ", mr.GetName(), mr.GetAnnotations()["crossplane.io/external-name"]))
		}
		refusedByOn(t, ctx, e, claimguardHook, realXPClaim, []string{"--as", "jane", "create", "-f", "-"}, parts...)

		// External-name collision: a new composed MR with the external name
		// of one still deleting is refused, whoever composes it.
		primary := mrs[0]
		intruder := fmt.Sprintf(`apiVersion: nop.crossplane.io/v1alpha1
kind: ClusterNopResource
metadata:
  name: realxp-intruder
  labels: {crossplane.io/composite: someone-else}
  annotations: {crossplane.io/external-name: %s}
spec: {forProvider: {}}
`, primary.GetAnnotations()["crossplane.io/external-name"])
		refusedByOn(t, ctx, e, claimguardManagedHook, intruder, []string{"--as", "jane", "create", "-f", "-"},
			fmt.Sprintf("claimguard: ClusterNopResource realxp-intruder with external name %q cannot be created yet: ClusterNopResource %s (", primary.GetAnnotations()["crossplane.io/external-name"], primary.GetName()),
			"composed by XDatabase "+xr,
			"Retry once ClusterNopResource "+primary.GetName()+" is gone")

		// Un-paused, the provider finishes the MRs; the garbage collector
		// then the XR, and Crossplane the claim. Re-creating it is allowed.
		for _, mr := range mrs {
			realXPPause(ctx, t, e, "clusternopresource", "", mr.GetName(), false)
		}
		realXPWaitGone(ctx, t, e, realXPClaimGVK, realXPNS, "db")
		realXPWaitGone(ctx, t, e, realXPXRGVK, "", xr)
		for _, mr := range mrs {
			realXPWaitGone(ctx, t, e, realXPClusterNopGV, "", mr.GetName())
		}
		kubectlOKOn(t, ctx, e, realXPClaim, "--as", "jane", "create", "-f", "-")
		var next string
		harness.Eventually(t, realXPTimeout, func() error {
			claim, err := realXPGet(ctx, e, realXPClaimGVK, realXPNS, "db")
			if err != nil {
				return err
			}
			next, _, _ = unstructured.NestedString(claim.Object, "spec", "resourceRef", "name")
			if next == "" || next == xr {
				return fmt.Errorf("the re-created claim's XR is %q: Crossplane has not created a new one yet", next)
			}
			return nil
		})
		realXPComposed(ctx, t, e, realXPClusterNopGV, "", next, map[string]string{"primary": "realxp-db-primary", "replica": "realxp-db-replica"})
	})

	t.Run("NamespacedXRRecreatedWhileDeletingIsRefused", func(t *testing.T) {
		kubectlOKOn(t, ctx, e, realXPCache, "--as", "jane", "create", "-f", "-")
		mrs := realXPComposed(ctx, t, e, realXPNopGVK, realXPNS, "cache", map[string]string{"cache": "realxp-cache"})
		mr := mrs[0]
		realXPPause(ctx, t, e, "nopresource", realXPNS, mr.GetName(), true)
		kubectlOKOn(t, ctx, e, "", "--as", "jane", "-n", realXPNS, "delete", "xcaches."+realXPGroup, "cache", "--cascade=foreground", "--wait=false")
		harness.Eventually(t, realXPTimeout, func() error {
			cur, err := realXPGet(ctx, e, realXPCacheGVK, realXPNS, "cache")
			if err != nil {
				return err
			}
			if cur.GetDeletionTimestamp() == nil || !slices.Contains(cur.GetFinalizers(), "foregroundDeletion") {
				return fmt.Errorf("XR cache: deletionTimestamp %v, finalizers %v; want it deleting in the foreground", cur.GetDeletionTimestamp(), cur.GetFinalizers())
			}
			if m, err := realXPGet(ctx, e, realXPNopGVK, realXPNS, mr.GetName()); err != nil || m.GetDeletionTimestamp() == nil {
				return fmt.Errorf("the garbage collector has not deleted MR %s yet (%v)", mr.GetName(), err)
			}
			return nil
		})
		waitGuardedOn(t, ctx, e, realXPCache, "xcaches."+realXPGroup)
		refusedByOn(t, ctx, e, claimguardHook, realXPCache, []string{"--as", "jane", "create", "-f", "-"},
			"claimguard: XCache "+realXPNS+"/cache cannot be created yet: the previous XCache "+realXPNS+"/cache has been deleting for ",
			" and is still held by 1 composed resource: ",
			fmt.Sprintf("NopResource %s/%s (external name %q; deleting for ", realXPNS, mr.GetName(), "realxp-cache"))

		realXPPause(ctx, t, e, "nopresource", realXPNS, mr.GetName(), false)
		realXPWaitGone(ctx, t, e, realXPCacheGVK, realXPNS, "cache")
		realXPWaitGone(ctx, t, e, realXPNopGVK, realXPNS, mr.GetName())
		kubectlOKOn(t, ctx, e, realXPCache, "--as", "jane", "create", "-f", "-")
		realXPComposed(ctx, t, e, realXPNopGVK, realXPNS, "cache", map[string]string{"cache": "realxp-cache"})
	})

	t.Run("NoWriteOfCrossplaneIsRefusedBySteward", func(t *testing.T) {
		writers := map[string]string{
			harness.CrossplaneUser():                                   "Crossplane",
			harness.ProviderNopUser():                                  "provider-nop",
			harness.ControllerManagerUser("generic-garbage-collector"): "the garbage collector",
		}
		events, err := e.AuditEvents(func(ev harness.AuditEvent) bool {
			_, ok := writers[ev.Writer()]
			return ok && ev.ObjectRef != nil && ev.Verb != "get" && ev.Verb != "list" && ev.Verb != "watch"
		})
		if err != nil {
			t.Fatal(err)
		}
		perWriter, refused, others := map[string]int{}, 0, map[string]int{}
		for _, ev := range events {
			perWriter[writers[ev.Writer()]]++
			what := fmt.Sprintf("%s %s %s/%s %s", writers[ev.Writer()], ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Subresource, ev.ObjectRef.Name)
			if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 {
				if strings.Contains(ev.ResponseStatus.Message, "admission webhook") {
					refused++
					t.Errorf("Steward refused %s: %s", what, ev.ResponseStatus.Message)
					continue
				}
				// A conflict or a NotFound refuses nothing: the controller
				// acted on an object another write had moved on, and acts
				// again.
				others[fmt.Sprintf("%s answered %d", what, ev.ResponseStatus.Code)]++
			}
		}
		for _, w := range []string{"Crossplane", "provider-nop", "the garbage collector"} {
			if perWriter[w] == 0 {
				t.Errorf("the audit log has no write of %s's: %v", w, perWriter)
			}
		}
		t.Logf("writes per controller: %v; answered with an error that refuses nothing (count each): %v", perWriter, others)
		t.Logf("Crossplane wrote %d times (core, provider-nop and the garbage collector), Steward refused %d", len(events), refused)
	})
}

// realXPXRDReady fails unless Crossplane has established the XRD's
// composite type (and offered its claim type, if it has one).
func realXPXRDReady(ctx context.Context, e *harness.Env, name string) error {
	xrd, err := realXPGet(ctx, e, schema.GroupVersionKind{Group: "apiextensions.crossplane.io", Version: "v2", Kind: "CompositeResourceDefinition"}, "", name)
	if err != nil {
		return err
	}
	want := []string{"Established"}
	if _, ok, _ := unstructured.NestedMap(xrd.Object, "spec", "claimNames"); ok {
		want = append(want, "Offered")
	}
	conditions, _, _ := unstructured.NestedSlice(xrd.Object, "status", "conditions")
	for _, w := range want {
		ok := false
		for _, c := range conditions {
			if m, _ := c.(map[string]any); m["type"] == w && m["status"] == "True" {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("XRD %s is not %s yet: conditions %v", name, w, conditions)
		}
	}
	return nil
}

// realXPGet returns the object of kind gvk.
func realXPGet(ctx context.Context, e *harness.Env, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
}

// realXPComposed waits until XR xr has composed one MR of kind gvk per
// resource name of want (the function's crossplane.io/composition-resource-name
// annotation), each with the external name want gives, held by the
// provider's finalizer and Ready, and returns them in the order of their
// resource names.
func realXPComposed(ctx context.Context, t *testing.T, e *harness.Env, gvk schema.GroupVersionKind, namespace, xr string, want map[string]string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	harness.Eventually(t, realXPTimeout, func() error {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := e.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{"crossplane.io/composite": xr}); err != nil {
			return err
		}
		byResource := map[string]*unstructured.Unstructured{}
		for i := range list.Items {
			mr := &list.Items[i]
			byResource[mr.GetAnnotations()["crossplane.io/composition-resource-name"]] = mr
		}
		out = out[:0]
		names := make([]string, 0, len(want))
		for name := range want {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			mr, ok := byResource[name]
			if !ok {
				return fmt.Errorf("XR %s has not composed its %s %q yet (composed: %d)", xr, gvk.Kind, name, len(list.Items))
			}
			if got := mr.GetAnnotations()["crossplane.io/external-name"]; got != want[name] {
				return fmt.Errorf("%s %s has external name %q, want %q", gvk.Kind, mr.GetName(), got, want[name])
			}
			if !slices.Contains(mr.GetFinalizers(), mrFinalizer) {
				return fmt.Errorf("%s %s has finalizers %v: the provider has not taken it yet", gvk.Kind, mr.GetName(), mr.GetFinalizers())
			}
			if !realXPCondition(mr, "Ready", "True", "") {
				return fmt.Errorf("%s %s is not Ready yet", gvk.Kind, mr.GetName())
			}
			out = append(out, mr)
		}
		return nil
	})
	return out
}

// realXPCondition reports whether obj has the condition typ with status
// (and reason, unless empty).
func realXPCondition(obj *unstructured.Unstructured, typ, status, reason string) bool {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if m, _ := c.(map[string]any); m["type"] == typ && m["status"] == status && (reason == "" || m["reason"] == reason) {
			return true
		}
	}
	return false
}

// realXPPause pauses an MR (crossplane.io/paused: "true") or un-pauses it,
// as an administrator does, and waits until the provider has seen it:
// a paused MR's Synced condition says ReconcilePaused.
func realXPPause(ctx context.Context, t *testing.T, e *harness.Env, resource, namespace, name string, pause bool) {
	t.Helper()
	args := []string{"annotate", resource, name, realXPPaused + "=true", "--overwrite"}
	if !pause {
		args = []string{"annotate", resource, name, realXPPaused + "-"}
	}
	if namespace != "" {
		args = append(args, "-n", namespace)
	}
	kubectlOKOn(t, ctx, e, "", args...)
	if !pause {
		return
	}
	gvk := realXPClusterNopGV
	if namespace != "" {
		gvk = realXPNopGVK
	}
	harness.Eventually(t, realXPTimeout, func() error {
		mr, err := realXPGet(ctx, e, gvk, namespace, name)
		if err != nil {
			return err
		}
		if !realXPCondition(mr, "Synced", "False", "ReconcilePaused") {
			return fmt.Errorf("%s %s is not ReconcilePaused yet", gvk.Kind, name)
		}
		return nil
	})
}

// realXPWaitGone waits until the object is gone.
func realXPWaitGone(ctx context.Context, t *testing.T, e *harness.Env, gvk schema.GroupVersionKind, namespace, name string) {
	t.Helper()
	harness.Eventually(t, realXPTimeout, func() error {
		cur, err := realXPGet(ctx, e, gvk, namespace, name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%s %s still exists: deletionTimestamp %v, finalizers %v", gvk.Kind, name, cur.GetDeletionTimestamp(), cur.GetFinalizers())
	})
}

// realXPWaitGCWatchesDependents waits until the garbage collector holds a
// Foreground deletion for ClusterNopResource dependents: a probe owner
// deleted in the foreground stays while its dependent, kept by a finalizer
// of the test's, is deleting. Until the collector has listed the kind, the
// owner goes at once; each such try is cleaned up and the next one starts.
func realXPWaitGCWatchesDependents(ctx context.Context, t *testing.T, e *harness.Env) {
	t.Helper()
	const probeFinalizer = "steward.dev/e2e-gc-probe"
	try := 0
	harness.Eventually(t, realXPTimeout, func() error {
		try++
		owner := fmt.Sprintf("gc-probe-owner-%d", try)
		dependent := fmt.Sprintf("gc-probe-dependent-%d", try)
		o := createUnstructuredOn(t, ctx, e, `apiVersion: nop.crossplane.io/v1alpha1
kind: ClusterNopResource
metadata: {name: `+owner+`}
spec: {forProvider: {}}
`)
		createUnstructuredOn(t, ctx, e, fmt.Sprintf(`apiVersion: nop.crossplane.io/v1alpha1
kind: ClusterNopResource
metadata:
  name: %s
  finalizers: [%s]
  ownerReferences:
  - {apiVersion: nop.crossplane.io/v1alpha1, kind: ClusterNopResource, name: %s, uid: %s, blockOwnerDeletion: true}
spec: {forProvider: {}}
`, dependent, probeFinalizer, owner, o.GetUID()))
		defer func() {
			kubectlOKOn(t, ctx, e, "", "patch", "clusternopresource", dependent, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
			realXPWaitGone(ctx, t, e, realXPClusterNopGV, "", owner)
			realXPWaitGone(ctx, t, e, realXPClusterNopGV, "", dependent)
		}()
		kubectlOKOn(t, ctx, e, "", "delete", "clusternopresource", owner, "--cascade=foreground", "--wait=false")
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			d, err := realXPGet(ctx, e, realXPClusterNopGV, "", dependent)
			if err != nil {
				return err
			}
			if d.GetDeletionTimestamp() != nil {
				if _, err := realXPGet(ctx, e, realXPClusterNopGV, "", owner); apierrors.IsNotFound(err) {
					return fmt.Errorf("probe %d: the garbage collector finished owner %s before its dependent: it has not listed ClusterNopResources yet", try, owner)
				}
				t.Logf("the garbage collector holds Foreground deletions on ClusterNopResources (probe %d)", try)
				return nil
			}
			time.Sleep(200 * time.Millisecond)
		}
		return fmt.Errorf("probe %d: the garbage collector has not deleted dependent %s within 20s", try, dependent)
	})
}
