package e2e

import (
	"context"
	"fmt"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// registeredWebhook is one webhook entry as the API server holds it.
type registeredWebhook struct {
	name, path    string
	mutating      bool
	failurePolicy admissionregistrationv1.FailurePolicyType
	timeout       time.Duration
	rules         int
}

// registeredWebhooks reads Steward's webhook configurations from the API
// server: what it will actually do when Steward does not answer.
func registeredWebhooks(t testing.TB, ctx context.Context) []registeredWebhook {
	t.Helper()
	var out []registeredWebhook
	add := func(name string, mutating bool, cc admissionregistrationv1.WebhookClientConfig, fp *admissionregistrationv1.FailurePolicyType, timeout *int32, rules int) {
		w := registeredWebhook{name: name, mutating: mutating, failurePolicy: admissionregistrationv1.Fail, timeout: 10 * time.Second, rules: rules}
		if fp != nil {
			w.failurePolicy = *fp
		}
		if timeout != nil {
			w.timeout = time.Duration(*timeout) * time.Second
		}
		if cc.URL != nil {
			if u, err := url.Parse(*cc.URL); err == nil {
				w.path = u.Path
			}
		}
		out = append(out, w)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, vwc); err != nil {
		t.Fatalf("reading the registered ValidatingWebhookConfiguration: %v", err)
	}
	for _, w := range vwc.Webhooks {
		add(w.Name, false, w.ClientConfig, w.FailurePolicy, w.TimeoutSeconds, len(w.Rules))
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, mwc); err != nil {
		t.Fatalf("reading the registered MutatingWebhookConfiguration: %v", err)
	}
	for _, w := range mwc.Webhooks {
		add(w.Name, true, w.ClientConfig, w.FailurePolicy, w.TimeoutSeconds, len(w.Rules))
	}
	return out
}

// guardedWrite is a write by an ordinary user that the API server sends to
// one particular Steward webhook. Every write is a dry run: the API server
// admits dry runs exactly like real writes (Steward's webhooks have no side
// effects), and nothing is left behind whatever the answer.
type guardedWrite func(ctx context.Context) error

var writeSeq atomic.Int64

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, writeSeq.Add(1))
}

// setupGuardedWrites creates, as the owning controllers would, what each
// webhook's write needs in namespace ns, and returns one write per webhook
// name. A rule that adds a webhook adds its write here; the outage test
// fails for a registered webhook without one.
func setupGuardedWrites(t *testing.T, ctx context.Context, ns string) map[string]guardedWrite {
	t.Helper()
	jane := userClient(t, "jane", []string{"devs"}, nil)
	janeKube := userClientset(t, "jane", "devs")
	// An operator: its writes go to the service accounts' entries.
	operator := userClient(t, "system:serviceaccount:ops:reloader", []string{"system:serviceaccounts"}, nil)
	agent := userClient(t, fleetAgent, nil, nil)
	admin := env.Client
	dryRun := []string{metav1.DryRunAll}

	managed := &corev1.ConfigMap{ObjectMeta: fleetManaged(ns, "fleet-managed"), Data: map[string]string{"k": "v"}}
	if err := agent.Create(ctx, managed); err != nil {
		t.Fatalf("the Fleet agent creating a Fleet-managed ConfigMap: %v", err)
	}
	web := webDeployment("web", metav1.ObjectMeta{Namespace: ns}, 1)
	if err := admin.Create(ctx, web); err != nil {
		t.Fatalf("creating Deployment web: %v", err)
	}

	sub := olmObject("Subscription", ns, "operator")
	_ = unstructured.SetNestedField(sub.Object, "stable", "spec", "channel")
	_ = unstructured.SetNestedField(sub.Object, "operator", "spec", "name")
	_ = unstructured.SetNestedField(sub.Object, ipgCatalog, "spec", "source")
	_ = unstructured.SetNestedField(sub.Object, "olm", "spec", "sourceNamespace")
	if err := admin.Create(ctx, sub); err != nil {
		t.Fatalf("creating Subscription: %v", err)
	}
	plan := olmObject("InstallPlan", ns, "install-abcde")
	plan.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Name: sub.GetName(), UID: sub.GetUID()}})
	_ = unstructured.SetNestedField(plan.Object, "Automatic", "spec", "approval")
	_ = unstructured.SetNestedField(plan.Object, true, "spec", "approved")
	_ = unstructured.SetNestedStringSlice(plan.Object, []string{"operator.v1.0.0"}, "spec", "clusterServiceVersionNames")
	if err := admin.Create(ctx, plan); err != nil {
		t.Fatalf("creating InstallPlan: %v", err)
	}
	_ = unstructured.SetNestedField(plan.Object, "Installing", "status", "phase")
	_ = unstructured.SetNestedStringSlice(plan.Object, []string{ipgCatalog}, "status", "catalogSources")
	if err := admin.Status().Update(ctx, plan); err != nil {
		t.Fatalf("setting the InstallPlan's phase: %v", err)
	}
	_ = unstructured.SetNestedMap(sub.Object, map[string]any{"name": plan.GetName(), "namespace": ns, "kind": "InstallPlan", "apiVersion": "operators.coreos.com/v1alpha1"}, "status", "installPlanRef")
	_ = unstructured.SetNestedField(sub.Object, "UpgradePending", "status", "state")
	_ = unstructured.SetNestedField(sub.Object, time.Now().UTC().Format(time.RFC3339), "status", "lastUpdated")
	if err := admin.Status().Update(ctx, sub); err != nil {
		t.Fatalf("setting the Subscription's installPlanRef: %v", err)
	}

	claim := &unstructured.Unstructured{}
	claim.SetAPIVersion("database.example.org/v1alpha1")
	claim.SetKind("PostgreSQLInstance")
	claim.SetNamespace(ns)
	claim.SetName("existing-claim")
	_ = unstructured.SetNestedField(claim.Object, int64(20), "spec", "parameters", "storageGB")
	if err := admin.Create(ctx, claim); err != nil {
		t.Fatalf("creating a claim: %v", err)
	}

	// A composed resource held in deletion by its finalizer, as a provider
	// holds an MR while it destroys the external resource.
	deleting := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: "composed-deleting", Finalizers: []string{"example.com/hold"},
		Labels:      map[string]string{"crossplane.io/composite": "db-x1b2c"},
		Annotations: map[string]string{"crossplane.io/external-name": "db-old"},
	}}
	if err := admin.Create(ctx, deleting); err != nil {
		t.Fatalf("creating a composed resource: %v", err)
	}
	t.Cleanup(func() {
		_ = admin.Patch(context.Background(), deleting.DeepCopy(), client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`)))
	})
	if err := admin.Delete(ctx, deleting.DeepCopy()); err != nil {
		t.Fatalf("deleting the composed resource: %v", err)
	}

	gitops := setupGitOpsWrites(t, ctx, ns)
	writes := map[string]guardedWrite{
		"claimguard-deleting.steward.dev": func(ctx context.Context) error {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"crossplane.io/external-name":"db-elsewhere"}}}`))
			return jane.Patch(ctx, deleting.DeepCopy(), patch, client.DryRunAll)
		},
		"fleetguard.steward.dev": func(ctx context.Context) error {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"k":"hand-edit"}}`))
			return jane.Patch(ctx, managed.DeepCopy(), patch, client.DryRunAll)
		},
		"fleetguard-serviceaccounts.steward.dev": func(ctx context.Context) error {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"k":"operator-edit"}}`))
			return operator.Patch(ctx, managed.DeepCopy(), patch, client.DryRunAll)
		},
		"fleetguard-scale.steward.dev": func(ctx context.Context) error {
			scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: web.Name}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
			_, err := janeKube.AppsV1().Deployments(ns).UpdateScale(ctx, web.Name, scale, metav1.UpdateOptions{DryRun: dryRun})
			return err
		},
		"apimigration.steward.dev": func(ctx context.Context) error {
			return jane.Create(ctx, fluxKustomization(ns, uniqueName("deprecated"), "v1beta2", false), client.DryRunAll)
		},
		"suspendnotice.steward.dev": func(ctx context.Context) error {
			return jane.Create(ctx, fluxKustomization(ns, uniqueName("suspended"), "v1", true), client.DryRunAll)
		},
		"suspendnotice-events.steward.dev": func(ctx context.Context) error {
			ev := &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: uniqueName("flux-event")},
				InvolvedObject: corev1.ObjectReference{Kind: "Kustomization", Namespace: ns, Name: "apps", APIVersion: "kustomize.toolkit.fluxcd.io/v1"},
				Reason:         "ReconciliationSucceeded",
				Message:        "Reconciliation finished in 1s, next run in 10m0s",
				Source:         corev1.EventSource{Component: "kustomize-controller"},
				Type:           corev1.EventTypeNormal,
			}
			return jane.Create(ctx, ev, client.DryRunAll)
		},
		"installplanguard.steward.dev": func(ctx context.Context) error {
			return jane.Delete(ctx, plan.DeepCopy(), client.DryRunAll)
		},
		"installplanguard-subscriptions.steward.dev": func(ctx context.Context) error {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"installPlanApproval":"Manual"}}`))
			return jane.Patch(ctx, sub.DeepCopy(), patch, client.DryRunAll)
		},
		"claimguard.steward.dev": func(ctx context.Context) error {
			c := claim.DeepCopy()
			c.SetName(uniqueName("claim"))
			c.SetResourceVersion("")
			c.SetUID("")
			return jane.Create(ctx, c, client.DryRunAll)
		},
		"claimguard-delete.steward.dev": func(ctx context.Context) error {
			return jane.Delete(ctx, claim.DeepCopy(), client.DryRunAll)
		},
		"claimguard-managed.steward.dev": func(ctx context.Context) error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace:   ns,
				Name:        uniqueName("composed"),
				Labels:      map[string]string{"crossplane.io/composite": "db-x1b2c"},
				Annotations: map[string]string{"crossplane.io/external-name": "db-prod"},
			}}
			return jane.Create(ctx, cm, client.DryRunAll)
		},
	}
	for name, w := range gitops {
		writes[name] = w
	}
	return writes
}

// setupGitOpsWrites creates, as Flux's and Argo CD's controllers would, a
// Kustomization, a HelmRelease and an Application with what they applied
// in namespace ns, and returns one write per webhook of fluxguard and
// argocdguard.
func setupGitOpsWrites(t *testing.T, ctx context.Context, ns string) map[string]guardedWrite {
	t.Helper()
	jane := userClient(t, "jane", []string{"devs"}, nil)
	janeKube := userClientset(t, "jane", "devs")
	// An operator: its writes go to the service accounts' entries.
	operator := userClient(t, "system:serviceaccount:ops:reloader", []string{"system:serviceaccounts"}, nil)
	kustomize := userClient(t, kustomizeUser, nil, nil)
	helm := userClient(t, helmUser, nil, nil)
	argo := userClient(t, argoController, nil, nil)
	dryRun := []string{metav1.DryRunAll}
	create := func(c client.Client, obj client.Object) {
		t.Helper()
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}

	ks := fluxKustomization(ns, "apps", "v1", false)
	create(kustomize, ks)
	_ = unstructured.SetNestedSlice(ks.Object, []any{
		map[string]any{"id": ns + "_flux-managed__ConfigMap", "v": "v1"},
		map[string]any{"id": ns + "_flux-web_apps_Deployment", "v": "v1"},
	}, "status", "inventory", "entries")
	if err := kustomize.Status().Update(ctx, ks); err != nil {
		t.Fatalf("kustomize-controller recording the inventory: %v", err)
	}
	kustomizeLabels := map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": ns}
	fluxManaged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flux-managed", Labels: kustomizeLabels}, Data: map[string]string{"k": "v"}}
	create(kustomize, fluxManaged)
	fluxWeb := webDeployment("flux-web", metav1.ObjectMeta{Namespace: ns, Labels: kustomizeLabels}, 1)
	create(kustomize, fluxWeb)

	hr := &unstructured.Unstructured{}
	hr.SetAPIVersion("helm.toolkit.fluxcd.io/v2")
	hr.SetKind("HelmRelease")
	hr.SetNamespace(ns)
	hr.SetName("redis")
	_ = unstructured.SetNestedField(hr.Object, "30m", "spec", "interval")
	_ = unstructured.SetNestedMap(hr.Object, map[string]any{"spec": map[string]any{"chart": "redis", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "bitnami"}}}, "spec", "chart")
	create(helm, hr)
	helmManaged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "helm-managed",
		Labels:      map[string]string{"helm.toolkit.fluxcd.io/name": "redis", "helm.toolkit.fluxcd.io/namespace": ns},
		Annotations: map[string]string{"meta.helm.sh/release-name": "redis", "meta.helm.sh/release-namespace": ns}}}
	create(helm, helmManaged)
	// What source-watcher generates carries its label: the generator entries
	// are reached whether or not a generator lists the object.
	generated := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "generated",
		Labels: map[string]string{"source.extensions.fluxcd.io/generator": "00000000-0000-0000-0000-000000000000"}}}
	create(userClient(t, sourceWatcher, nil, nil), generated)

	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	app.SetNamespace(ns)
	app.SetName("shop")
	_ = unstructured.SetNestedField(app.Object, "default", "spec", "project")
	_ = unstructured.SetNestedMap(app.Object, map[string]any{"repoURL": "https://github.com/example/shop", "path": "shop"}, "spec", "source")
	_ = unstructured.SetNestedMap(app.Object, map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}, "spec", "destination")
	_ = unstructured.SetNestedSlice(app.Object, []any{
		map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": ns, "name": "argo-managed"},
		map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": ns, "name": "argo-web"},
	}, "status", "resources")
	create(argo, app)
	tracked := func(kind, group, name string) map[string]string {
		return map[string]string{"argocd.argoproj.io/tracking-id": ns + "_shop:" + group + "/" + kind + ":" + ns + "/" + name}
	}
	argoManaged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "argo-managed", Annotations: tracked("ConfigMap", "", "argo-managed")}}
	create(argo, argoManaged)
	argoWeb := webDeployment("argo-web", metav1.ObjectMeta{Namespace: ns, Annotations: tracked("Deployment", "apps", "argo-web")}, 1)
	create(argo, argoWeb)

	edit := client.RawPatch(types.MergePatchType, []byte(`{"data":{"k":"hand-edit"}}`))
	scale := func(name string) guardedWrite {
		return func(ctx context.Context) error {
			s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
			_, err := janeKube.AppsV1().Deployments(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{DryRun: dryRun})
			return err
		}
	}
	return map[string]guardedWrite{
		"fluxguard.steward.dev": func(ctx context.Context) error {
			return jane.Patch(ctx, fluxManaged.DeepCopy(), edit, client.DryRunAll)
		},
		"fluxguard-helm.steward.dev": func(ctx context.Context) error {
			return jane.Patch(ctx, helmManaged.DeepCopy(), edit, client.DryRunAll)
		},
		"fluxguard-serviceaccounts.steward.dev": func(ctx context.Context) error {
			return operator.Patch(ctx, fluxManaged.DeepCopy(), edit, client.DryRunAll)
		},
		"fluxguard-helm-serviceaccounts.steward.dev": func(ctx context.Context) error {
			return operator.Patch(ctx, helmManaged.DeepCopy(), edit, client.DryRunAll)
		},
		"fluxguard-generator.steward.dev": func(ctx context.Context) error {
			return jane.Patch(ctx, generated.DeepCopy(), edit, client.DryRunAll)
		},
		"fluxguard-generator-serviceaccounts.steward.dev": func(ctx context.Context) error {
			return operator.Patch(ctx, generated.DeepCopy(), edit, client.DryRunAll)
		},
		"fluxguard-scale.steward.dev": scale(fluxWeb.Name),
		"fluxguard-records.steward.dev": func(ctx context.Context) error {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"inventory":{"entries":[]}}}`))
			return jane.Status().Patch(ctx, ks.DeepCopy(), patch, &client.SubResourcePatchOptions{PatchOptions: client.PatchOptions{DryRun: dryRun}})
		},
		"argocdguard.steward.dev": func(ctx context.Context) error {
			return jane.Patch(ctx, argoManaged.DeepCopy(), edit, client.DryRunAll)
		},
		"argocdguard-serviceaccounts.steward.dev": func(ctx context.Context) error {
			return operator.Patch(ctx, argoManaged.DeepCopy(), edit, client.DryRunAll)
		},
		"argocdguard-scale.steward.dev": scale(argoWeb.Name),
		"argocdguard-records.steward.dev": func(ctx context.Context) error {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"resources":[]}}`))
			return jane.Patch(ctx, app.DeepCopy(), patch, client.DryRunAll)
		},
	}
}

func olmObject(kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("operators.coreos.com/v1alpha1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func fluxKustomization(ns, name, version string, suspend bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kustomize.toolkit.fluxcd.io/" + version)
	u.SetKind("Kustomization")
	u.SetNamespace(ns)
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, "10m", "spec", "interval")
	_ = unstructured.SetNestedField(u.Object, "./apps", "spec", "path")
	_ = unstructured.SetNestedField(u.Object, true, "spec", "prune")
	_ = unstructured.SetNestedMap(u.Object, map[string]any{"kind": "GitRepository", "name": "apps"}, "spec", "sourceRef")
	if suspend {
		_ = unstructured.SetNestedField(u.Object, true, "spec", "suspend")
	}
	return u
}

// pathCalls is how many requests the shared environment's Steward
// answered at path.
func pathCalls(t *testing.T, path string) float64 {
	t.Helper()
	return webhookCalls(t, env.Steward, path)
}

// webhookCalls is how many requests Steward's webhook server has received
// at path (controller-runtime's per-path counter).
func webhookCalls(t testing.TB, s *harness.Steward, path string) float64 {
	t.Helper()
	n, err := s.Counter("controller_runtime_webhook_requests_total", map[string]string{"webhook": path})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
