package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// fluxguardConfig lets members of flux:opt-out add Flux's opt-out markers
// by hand, each as a change of its own.
const fluxguardConfig = harness.DefaultConfig + `rules:
  fluxguard:
    optOutGroups: ["flux:opt-out"]
`

const (
	fluxSystemNS    = "flux-system"
	fluxAppsNS      = "flux-apps"
	fluxTenantNS    = "flux-team-a"
	kustomizeUser   = "system:serviceaccount:flux-system:kustomize-controller"
	helmUser        = "system:serviceaccount:flux-system:helm-controller"
	fluxTenantUser  = "system:serviceaccount:flux-team-a:deployer"
	fluxguardPaths  = "/validate/fluxguard"
	fluxguardHook   = `admission webhook "fluxguard.steward.dev" denied the request: `
	fluxHelmHook    = `admission webhook "fluxguard-helm.steward.dev" denied the request: `
	fluxScaleHook   = `admission webhook "fluxguard-scale.steward.dev" denied the request: `
	fluxAppsOwner   = "Flux Kustomization flux-system/apps (GitRepository flux-system/flux-system, path ./apps/prod, revision main@sha1:1a2b3c4); it is reverted at the next reconcile (interval 10m)."
	fluxPauseHint   = "to pause Flux for this object, a member of flux:opt-out can set kustomize.toolkit.fluxcd.io/reconcile=disabled; in an emergency repeat the request as a member of steward:break-glass."
	kustomizeLabels = `{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}`
)

// fluxSetup is what kustomize-controller and helm-controller would have
// done: the Kustomizations and a HelmRelease, their inventories in their
// status, and the objects they applied.
const fluxSetup = `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 10m, path: ./clusters/prod, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
  labels: {"kustomize.toolkit.fluxcd.io/name": "flux-system", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
spec: {interval: 10m, path: ./apps/prod, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: tenant, namespace: flux-team-a}
spec: {interval: 5m, path: ./team-a, prune: true, serviceAccountName: deployer, sourceRef: {kind: GitRepository, name: team-a}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: redis, namespace: flux-apps}
spec:
  interval: 30m
  chart: {spec: {chart: redis, version: "20.x", sourceRef: {kind: HelmRepository, name: bitnami}}}
`

// fluxApplied are the objects the controllers applied: in apps'
// inventory the Deployments (autoscaled's replicas are not in Git), a CRD
// with a conversion webhook, the ConfigMap, the namespace and a Pod; the
// tenant's ConfigMap; and redis' Deployment, which carries its Helm
// release's annotations (a HelmRelease of Flux 2.6 keeps no inventory).
const fluxApplied = `
apiVersion: v1
kind: Namespace
metadata: {name: flux-apps, labels: ` + kustomizeLabels + `}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: podinfo, namespace: flux-apps, labels: ` + kustomizeLabels + `}
spec:
  replicas: 2
  selector: {matchLabels: {app: podinfo}}
  template:
    metadata: {labels: {app: podinfo}}
    spec: {containers: [{name: podinfo, image: ghcr.io/stefanprodan/podinfo:6.7.0}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: autoscaled, namespace: flux-apps, labels: ` + kustomizeLabels + `}
spec:
  selector: {matchLabels: {app: autoscaled}}
  template:
    metadata: {labels: {app: autoscaled}}
    spec: {containers: [{name: web, image: ghcr.io/example/web:1}]}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.flux-e2e.example.com, labels: ` + kustomizeLabels + `}
spec:
  group: flux-e2e.example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {service: {name: widget-webhook, namespace: flux-apps, path: /convert}}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: flux-apps, labels: ` + kustomizeLabels + `}
data: {a: "1"}
---
apiVersion: v1
kind: Pod
metadata: {name: debugme, namespace: flux-apps, labels: ` + kustomizeLabels + `}
spec: {containers: [{name: app, image: ghcr.io/example/app:1, resources: {requests: {cpu: 100m}, limits: {cpu: 100m}}}]}
`

const fluxHelmApplied = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: redis
  namespace: flux-apps
  labels: {"helm.toolkit.fluxcd.io/name": "redis", "helm.toolkit.fluxcd.io/namespace": "flux-apps", "app.kubernetes.io/managed-by": "Helm"}
  annotations: {"meta.helm.sh/release-name": "redis", "meta.helm.sh/release-namespace": "flux-apps"}
spec:
  replicas: 1
  selector: {matchLabels: {app: redis}}
  template:
    metadata: {labels: {app: redis}}
    spec: {containers: [{name: redis, image: docker.io/bitnami/redis:7.4}]}
`

// TestFluxguard proves fluxguard through the real API server, with Flux's
// own Kustomization and HelmRelease CRDs: Flux's controllers apply and are
// never sent to Steward, people's edits of what Flux applied are refused
// with the whole explanation, every way around it is refused too, and
// what Flux does not own (or has paused, or was told to leave alone) is
// not guarded.
func TestFluxguard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	if _, err := env.RestartSteward(ctx, fluxguardConfig); err != nil {
		t.Fatalf("starting steward with the fluxguard configuration: %v", err)
	}
	restoreDefaultSteward(t)
	for _, ns := range []string{fluxSystemNS, fluxTenantNS} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "--as", kustomizeUser, "delete", "namespace", fluxAppsNS, fluxTenantNS, "--wait=false")
		_, _, _ = env.Kubectl(context.Background(), "", "--as", kustomizeUser, "-n", fluxSystemNS, "delete", "kustomization", "apps", "flux-system", "--wait=false")
	})
	// Applied as kustomize-controller applies: server-side, under its field
	// manager, whose managedFields entry then says which fields are Git's.
	kubectlOK(t, ctx, fluxApplied, "--as", kustomizeUser, "apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-")
	kubectlOK(t, ctx, fluxSetup, "--as", kustomizeUser, "apply", "-f", "-")
	kubectlOK(t, ctx, "", "--as", kustomizeUser, "-n", fluxSystemNS, "patch", "kustomization", "flux-system", "--subresource=status", "--type=merge", "-p",
		harness.FluxInventoryStatus("flux-system_apps_kustomize.toolkit.fluxcd.io_Kustomization"))
	kubectlOK(t, ctx, "", "--as", kustomizeUser, "-n", fluxSystemNS, "patch", "kustomization", "apps", "--subresource=status", "--type=merge", "-p",
		harness.FluxInventoryStatus("_flux-apps__Namespace", "flux-apps_podinfo_apps_Deployment", "flux-apps_settings__ConfigMap", "flux-apps_debugme__Pod", "flux-apps_merged__ConfigMap",
			"flux-apps_autoscaled_apps_Deployment", "_widgets.flux-e2e.example.com_apiextensions.k8s.io_CustomResourceDefinition"))
	// An object applied with ssa: Merge, server-side as kustomize-controller
	// applies: Flux keeps what others add to it.
	kubectlOK(t, ctx, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"merged","namespace":"flux-apps","labels":`+kustomizeLabels+`,"annotations":{"kustomize.toolkit.fluxcd.io/ssa":"Merge"}},"data":{"a":"1"}}`,
		"--as", kustomizeUser, "apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-")
	kubectlOK(t, ctx, "", "--as", kustomizeUser, "-n", fluxTenantNS, "patch", "kustomization", "tenant", "--subresource=status", "--type=merge", "-p",
		harness.FluxInventoryStatus("flux-team-a_tenant-settings__ConfigMap"))
	kubectlOK(t, ctx, fluxHelmApplied, "--as", helmUser, "apply", "-f", "-")

	// Steward's cache sees the inventories a moment after the API server.
	harness.Eventually(t, 30*time.Second, func() error {
		_, stderr, err := env.Kubectl(ctx, "", "--as", adversary, "-n", fluxAppsNS, "label", "configmap", "settings", "probe=1", "--dry-run=server")
		if err == nil || !strings.Contains(stderr, fluxguardHook) {
			return fmt.Errorf("a hand edit is not refused yet: %v %s", err, stderr)
		}
		return nil
	})
	// The tenant's service account creates its Kustomization's object, as
	// kustomize-controller impersonating it does: allowed once Steward has
	// cached the Kustomization that names it.
	tenant, err := env.As(fluxTenantUser)
	if err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tenant-settings", Namespace: fluxTenantNS, Labels: map[string]string{
			"kustomize.toolkit.fluxcd.io/name": "tenant", "kustomize.toolkit.fluxcd.io/namespace": fluxTenantNS}}}
		return client.IgnoreAlreadyExists(tenant.Create(ctx, cm))
	})

	t.Run("TheClusterMachineryIsNotRefused", func(t *testing.T) {
		fluxguardMachinery(ctx, t)
	})

	t.Run("TheWholeDenial", func(t *testing.T) {
		_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fluxAppsNS, "set", "image", "deployment/podinfo", "podinfo=ghcr.io/stefanprodan/podinfo:6.7.1")
		want := fluxguardHook + "fluxguard: Deployment flux-apps/podinfo is managed by " + fluxAppsOwner +
			" Changed: /spec/template/spec/containers/0/image. Change it in the Git repository instead; " + fluxPauseHint
		if err == nil || !strings.Contains(stderr, want) {
			t.Fatalf("want the denial\n%s\ngot %v:\n%s", want, err, stderr)
		}
	})

	t.Run("FluxControllersNeverReachSteward", func(t *testing.T) {
		unchangedCalls(t, fluxguardPaths, func() {
			kubectlOK(t, ctx, "", "--as", kustomizeUser, "-n", fluxAppsNS, "set", "image", "deployment/podinfo", "podinfo=ghcr.io/stefanprodan/podinfo:6.7.0-1")
			kubectlOK(t, ctx, "", "--as", kustomizeUser, "-n", fluxAppsNS, "label", "configmap", "settings", "reapplied=yes")
		})
		unchangedCalls(t, fluxguardPaths+"/helm", func() {
			kubectlOK(t, ctx, "", "--as", helmUser, "-n", fluxAppsNS, "label", "deployment", "redis", "upgraded=yes")
		})
	})

	t.Run("HelmReleaseDriftDetectionOff", func(t *testing.T) {
		_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fluxAppsNS, "set", "image", "deployment/redis", "redis=docker.io/bitnami/redis:7.2")
		want := fluxHelmHook + "fluxguard: Deployment flux-apps/redis is managed by Flux HelmRelease flux-apps/redis (chart redis from HelmRepository flux-apps/bitnami); " +
			"its drift detection is disabled, so the change would persist unseen until the next upgrade of the release overwrites it."
		if err == nil || !strings.Contains(stderr, want) {
			t.Fatalf("want the denial\n%s\ngot %v:\n%s", want, err, stderr)
		}
	})

	mallory, err := env.As(adversary)
	if err != nil {
		t.Fatal(err)
	}
	opter, err := env.As("olivia", "flux:opt-out")
	if err != nil {
		t.Fatal(err)
	}
	// An operator: a service account that is neither Flux's nor a tenant's.
	operator, err := env.As("system:serviceaccount:ops:reloader", "system:serviceaccounts", "system:serviceaccounts:ops")
	if err != nil {
		t.Fatal(err)
	}
	in := func(args ...string) []string { return append([]string{"-n", fluxAppsNS}, args...) }
	const (
		deleting = "Deleting it is refused: Flux would re-create it."
		stripped = "Removing Flux's ownership label kustomize.toolkit.fluxcd.io/name is refused"
		spoofed  = "Flux's ownership label kustomize.toolkit.fluxcd.io/name and label kustomize.toolkit.fluxcd.io/namespace (Kustomization flux-system/apps), which only a Flux controller sets"
	)
	runChains(ctx, t, []chain{{
		name: "StripLabelThenEdit",
		steps: []step{
			{what: "remove the Kustomization's name label", refused: stripped, kubectl: in("label", "configmap", "settings", "kustomize.toolkit.fluxcd.io/name-")},
			{what: "remove it through /status of the Pod", refused: stripped, kubectl: in("patch", "pod", "debugme", "--subresource=status", "--type=json", "-p", `[{"op":"remove","path":"/metadata/labels/kustomize.toolkit.fluxcd.io~1name"}]`)},
			{what: "point the labels at a Kustomization that does not list the object", refused: "Changed: /metadata/labels/kustomize.toolkit.fluxcd.io~1name.", kubectl: in("label", "configmap", "settings", "kustomize.toolkit.fluxcd.io/name=other", "--overwrite")},
			{what: "then edit", refused: "Changed: /data/a.", kubectl: in("patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"a":"2"}}`)},
		},
	}, {
		name: "RewriteTheInventoryThenEdit",
		steps: []step{
			{what: "drop the ConfigMap from the Kustomization's inventory through /status", refused: "Kustomization flux-system/apps's status.inventory is Flux's record of the objects it manages",
				kubectl: []string{"-n", fluxSystemNS, "patch", "kustomization", "apps", "--subresource=status", "--type=merge", "-p", harness.FluxInventoryStatus("flux-apps_podinfo_apps_Deployment")}},
			{what: "then edit it", refused: "Changed: /data/a.", kubectl: in("patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"a":"5"}}`)},
		},
	}, {
		name: "OwnerReferenceInjection",
		steps: []step{
			{what: "create a ConfigMap to own the Deployment", allowed: "an unlabelled object is no business of fluxguard", kubectl: in("create", "configmap", "flux-bait")},
			{what: "make it an owner of the Deployment", refused: "Adding the owner reference ConfigMap flux-bait is refused", do: func(ctx context.Context) error {
				return addOwnerIn(ctx, mallory, fluxAppsNS, "podinfo", "flux-bait", false)
			}},
			{what: "through /status", refused: "Adding the owner reference ConfigMap flux-bait is refused", do: func(ctx context.Context) error {
				return addOwnerIn(ctx, mallory, fluxAppsNS, "podinfo", "flux-bait", true)
			}},
		},
	}, {
		name: "ManagedFieldsRewriteThenEdit",
		steps: []step{
			{what: "rewrite managedFields so kustomize-controller owns nothing", refused: "Changed: /metadata/managedFields (the kustomize-controller entry, which records what",
				kubectl: in("patch", "configmap", "settings", "--type=json", "-p", `[{"op":"replace","path":"/metadata/managedFields","value":[{}]}]`)},
			{what: "then edit", refused: "Changed: /data/a.", kubectl: in("patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"a":"2"}}`)},
		},
	}, {
		name: "MergeObjectThenManagedFieldsRewrite",
		steps: []step{
			{what: "a person adds a key to a ConfigMap Flux applies with ssa: Merge", refused: "Changed: /data/b, which Git does not declare: kustomize-controller keeps fields others set on an ssa: Merge object",
				kubectl: in("patch", "configmap", "merged", "--type=merge", "-p", `{"data":{"b":"mine"}}`)},
			{what: "an operator's service account adds it", allowed: "only kustomize-controller's own fields are Git's: Flux keeps fields others set",
				do: func(ctx context.Context) error {
					return mergePatch(ctx, operator, fluxAppsNS, "merged", `{"data":{"b":"mine"}}`)
				}},
			{what: "change a key kustomize-controller applied", refused: "Changed: /data/a.", kubectl: in("patch", "configmap", "merged", "--type=merge", "-p", `{"data":{"a":"2"}}`)},
			{what: "rewrite managedFields so kustomize-controller owns nothing", refused: "Changed: /metadata/managedFields (the kustomize-controller entry, which records what",
				kubectl: in("patch", "configmap", "merged", "--type=json", "-p", `[{"op":"replace","path":"/metadata/managedFields","value":[{}]}]`)},
			{what: "then change the key", refused: "Changed: /data/a.", kubectl: in("patch", "configmap", "merged", "--type=merge", "-p", `{"data":{"a":"3"}}`)},
		},
	}, {
		name: "OptOutWithoutTheGroup",
		steps: []step{
			{what: "set reconcile=disabled", refused: "Adding an opt-out (/metadata/annotations/kustomize.toolkit.fluxcd.io~1reconcile) is refused", kubectl: in("annotate", "configmap", "settings", "kustomize.toolkit.fluxcd.io/reconcile=disabled")},
			{what: "set it as a label", refused: "Adding an opt-out (/metadata/labels/kustomize.toolkit.fluxcd.io~1reconcile) is refused", kubectl: in("label", "configmap", "settings", "kustomize.toolkit.fluxcd.io/reconcile=disabled")},
			{what: "a member of the opt-out group sets it with another change", refused: "Changed: /data/a, /metadata/annotations/kustomize.toolkit.fluxcd.io~1reconcile.", do: func(ctx context.Context) error {
				return mergePatch(ctx, opter, fluxAppsNS, "settings", `{"metadata":{"annotations":{"kustomize.toolkit.fluxcd.io/reconcile":"disabled"}},"data":{"a":"3"}}`)
			}},
		},
	}, {
		name: "SpoofedCreateAndGainedLabels",
		steps: []step{
			{what: "create a ConfigMap with the Kustomization's labels", refused: spoofed, do: func(ctx context.Context) error {
				return mallory.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fake", Namespace: fluxAppsNS, Labels: map[string]string{
					"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": fluxSystemNS}}})
			}},
			{what: "create an unlabelled ConfigMap", allowed: "no claim", kubectl: in("create", "configmap", "flux-plain")},
			{what: "give it the labels", refused: "would gain " + spoofed, kubectl: in("label", "configmap", "flux-plain", "kustomize.toolkit.fluxcd.io/name=apps", "kustomize.toolkit.fluxcd.io/namespace=flux-system")},
		},
	}, {
		name: "TenantServiceAccountOfAnotherOwner",
		steps: []step{
			{what: "the tenant's service account edits its own Kustomization's ConfigMap", allowed: "Flux impersonates spec.serviceAccountName for the tenant's objects", do: func(ctx context.Context) error {
				return mergePatch(ctx, tenant, fluxTenantNS, "tenant-settings", `{"data":{"edited":"yes"}}`)
			}},
			{what: "the tenant's service account edits a key Git declares in apps' ConfigMap", refused: "Changed: /data/a.", do: func(ctx context.Context) error {
				return mergePatch(ctx, tenant, fluxAppsNS, "settings", `{"data":{"a":"tenant"}}`)
			}},
		},
	}, {
		name: "SubresourcesAndScale",
		steps: []step{
			{what: "kubectl debug adds an ephemeral container", refused: "Changed: /spec/ephemeralContainers", kubectl: in("debug", "pod/debugme", "--image=busybox", "--container=dbg")},
			{what: "scale the Deployment", refused: "Changed: /spec/replicas.", kubectl: in("scale", "deployment", "podinfo", "--replicas=5")},
		},
	}, {
		name: "DeletesOfEveryKind",
		steps: []step{
			{what: "delete the Deployment", refused: deleting, kubectl: in("delete", "deployment", "podinfo", "--wait=false")},
			{what: "DeleteCollection of the namespace's ConfigMaps", refused: deleting, do: func(ctx context.Context) error {
				return mallory.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(fluxAppsNS), client.MatchingLabels{"kustomize.toolkit.fluxcd.io/name": "apps"})
			}},
			{what: "delete the Flux-managed namespace", refused: deleting, kubectl: []string{"delete", "namespace", fluxAppsNS, "--wait=false"}},
		},
	}})
	t.Run("WhatIsNotGuarded", func(t *testing.T) {
		// An object whose labels name a Kustomization that does not list
		// it (pruning disabled, removed from Git) is not Flux's.
		kubectlOK(t, ctx, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"orphan","namespace":"flux-apps","labels":`+kustomizeLabels+`}}`, "--as", kustomizeUser, "apply", "-f", "-")
		kubectlOK(t, ctx, "", "--as", "jane", "-n", fluxAppsNS, "label", "configmap", "orphan", "edited=yes")
		// Control writes on Flux's own objects are not edits, even when
		// Flux applied them: apps is in flux-system's inventory, and an
		// edit of its spec is refused.
		kubectlOK(t, ctx, "", "--as", "jane", "-n", fluxSystemNS, "annotate", "kustomization", "apps", "reconcile.fluxcd.io/requestedAt=now", "--overwrite")
		if _, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fluxSystemNS, "patch", "kustomization", "apps", "--type=merge", "-p", `{"spec":{"path":"./apps/staging"}}`); err == nil || !strings.Contains(stderr, "Changed: /spec/path.") {
			t.Errorf("editing a Flux-managed Kustomization's spec: want it refused, got %v:\n%s", err, stderr)
		}
		// A member of the opt-out group may add the marker on its own,
		// after which the object is Flux's no more.
		if err := mergePatch(ctx, opter, fluxAppsNS, "settings", `{"metadata":{"annotations":{"kustomize.toolkit.fluxcd.io/reconcile":"disabled"}}}`); err != nil {
			t.Fatalf("the opt-out by a member of the group: %v", err)
		}
		harness.Eventually(t, 10*time.Second, func() error {
			_, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fluxAppsNS, "patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"a":"4"}}`)
			return err
		})
	})

	t.Run("SuspendedKustomizationAllowsWithAWarning", func(t *testing.T) {
		kubectlOK(t, ctx, "", "--as", "jane", "-n", fluxSystemNS, "patch", "kustomization", "apps", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
		harness.Eventually(t, 10*time.Second, func() error {
			_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fluxAppsNS, "set", "image", "deployment/podinfo", "podinfo=ghcr.io/stefanprodan/podinfo:6.7.1")
			if err != nil || !strings.Contains(stderr, "Flux Kustomization flux-system/apps is suspended") {
				return fmt.Errorf("the edit during the suspension: %v %s", err, stderr)
			}
			return nil
		})
		kubectlOK(t, ctx, "", "--as", "jane", "-n", fluxSystemNS, "patch", "kustomization", "apps", "--type=merge", "-p", `{"spec":{"suspend":false}}`)
	})
}

// addOwnerIn makes ConfigMap owner an owner of Deployment name in
// namespace, through the object or its status subresource.
func addOwnerIn(ctx context.Context, c client.Client, namespace, name, owner string, status bool) error {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: owner}, cm); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q}]}}`, owner, cm.UID)
	d := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if status {
		return c.Status().Patch(ctx, d, client.RawPatch("application/merge-patch+json", []byte(patch)))
	}
	return c.Patch(ctx, d, client.RawPatch("application/merge-patch+json", []byte(patch)))
}

// mergePatch merge-patches ConfigMap name as c.
func mergePatch(ctx context.Context, c client.Client, namespace, name, patch string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return c.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", []byte(patch)))
}

// flux29Objects are a Kustomization whose drift ignore rule (spec.ignore,
// new in Flux 2.9) leaves Deployments' replicas to their autoscaler, a
// HelmRelease whose status keeps an inventory (Flux 2.8 on), and what
// their controllers applied.
const flux29Objects = `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps29, namespace: flux-29}
spec:
  interval: 10m
  path: ./apps
  prune: true
  sourceRef: {kind: GitRepository, name: apps}
  ignore: [{paths: ["/spec/replicas"], target: {kind: Deployment}}]
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: cache29, namespace: flux-29}
spec:
  interval: 30m
  driftDetection: {mode: enabled}
  chartRef: {kind: OCIRepository, name: cache}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: flux-29, labels: {"kustomize.toolkit.fluxcd.io/name": "apps29", "kustomize.toolkit.fluxcd.io/namespace": "flux-29"}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: ghcr.io/example/web:1}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cache-settings, namespace: flux-29, labels: {"helm.toolkit.fluxcd.io/name": "cache29", "helm.toolkit.fluxcd.io/namespace": "flux-29"}}
data: {size: "1Gi"}
`

// fluxguardOnFlux29 runs while the suite has Flux 2.9's CRDs installed
// (TestApimigrationTargetsTheInstalledRelease): the Kustomization's ignore
// rule lets an autoscaler's replicas through, an image change is refused,
// and an object the HelmRelease lists in its inventory (it carries no Helm
// release annotations) is refused with what helm-controller does.
func fluxguardOnFlux29(ctx context.Context, t *testing.T) {
	const ns = "flux-29"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "--as", kustomizeUser, "delete", "namespace", ns, "--wait=false")
	})
	kubectlOK(t, ctx, flux29Objects, "--as", kustomizeUser, "apply", "-f", "-")
	kubectlOK(t, ctx, "", "--as", kustomizeUser, "-n", ns, "patch", "kustomization", "apps29", "--subresource=status", "--type=merge", "-p", harness.FluxInventoryStatus("flux-29_web_apps_Deployment"))
	kubectlOK(t, ctx, "", "--as", helmUser, "-n", ns, "patch", "helmrelease", "cache29", "--subresource=status", "--type=merge", "-p",
		`{"status":{"inventory":{"entries":[{"id":"flux-29_cache-settings__ConfigMap","v":"v1"}]}}}`)
	harness.Eventually(t, 30*time.Second, func() error {
		_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ns, "set", "image", "deployment/web", "web=ghcr.io/example/web:2", "--dry-run=server")
		if err == nil || !strings.Contains(stderr, fluxguardHook+"fluxguard: Deployment flux-29/web is managed by Flux Kustomization flux-29/apps29 (GitRepository flux-29/apps, path ./apps, revision main@sha1:1a2b3c4)") {
			return fmt.Errorf("the image change is not refused yet: %v %s", err, stderr)
		}
		return nil
	})
	kubectlOK(t, ctx, "", "--as", "jane", "-n", ns, "patch", "deployment", "web", "--type=merge", "-p", `{"spec":{"replicas":3}}`)
	// A server-side dry run until Steward's cache has the HelmRelease's
	// inventory (an edit allowed before would be stored, and its repeat
	// would change nothing), then the edit itself.
	want := fluxHelmHook + "fluxguard: ConfigMap flux-29/cache-settings is managed by Flux HelmRelease flux-29/cache29 (chart from OCIRepository flux-29/cache); it is reverted at the next reconcile (interval 30m). Changed: /data/size."
	editSize := func(dryRun ...string) error {
		_, stderr, err := env.Kubectl(ctx, "", append([]string{"--as", "jane", "-n", ns, "patch", "configmap", "cache-settings", "--type=merge", "-p", `{"data":{"size":"2Gi"}}`}, dryRun...)...)
		if err == nil || !strings.Contains(stderr, want) {
			return fmt.Errorf("want the denial\n%s\ngot %v:\n%s", want, err, stderr)
		}
		return nil
	}
	harness.Eventually(t, 30*time.Second, func() error { return editSize("--dry-run=server") })
	if err := editSize(); err != nil {
		t.Error(err)
	}
}
