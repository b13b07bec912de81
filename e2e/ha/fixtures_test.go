package ha

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// The identities the writes are sent as.
const (
	breakGlass     = "steward:break-glass"
	fleetAgent     = "system:serviceaccount:cattle-fleet-system:fleet-agent"
	kustomizeUser  = "system:serviceaccount:flux-system:kustomize-controller"
	fluxTenantUser = "system:serviceaccount:flux-team-a:deployer"
	argoController = "system:serviceaccount:argocd:argocd-application-controller"
	olmOperator    = "system:serviceaccount:olm:olm-operator-serviceaccount"
	olmAPIVersion  = "operators.coreos.com/v1alpha1"
	xrAPIVersion   = "database.example.org/v1alpha1"
)

// The fixtures' namespaces and names.
const (
	fleetNS    = "ha-fleet"
	fluxAppsNS = "flux-apps"
	fluxTeamNS = "flux-team-a"
	argoAppsNS = "guestbook"
	olmNS      = "ha-olm"
	deletingXR = "ha-db-deleting"
)

// write is one kind of request the writers send, with the answer a
// healthy Steward gives it.
type write struct {
	name string
	// hook and reason are the expected denial: the webhook that refuses
	// and what its message must say (a part only Steward's caches can
	// supply, where the rule reads one). Both are empty for a write that
	// must be allowed.
	hook, reason string
	// viaSteward says whether the API server calls Steward for it;
	// agents' and controllers' writes are kept from Steward by the
	// webhooks' matchConditions.
	viaSteward bool
	do         func(ctx context.Context) error
}

// outcome is how a write went.
type outcome int

const (
	// answered: the answer a healthy Steward gives.
	answered outcome = iota
	// failed: an error or a timeout that is no admission decision, such as
	// the API server's "failed calling webhook" (EOF, connection refused,
	// context deadline exceeded).
	failed
	// wrong: allowed when it must be refused, refused when it must be
	// allowed, or refused for another reason than a healthy Steward's.
	wrong
)

func (o outcome) String() string {
	return [...]string{"answered", "failed", "wrong"}[o]
}

// judge says how a write went from its error.
func (w write) judge(err error) outcome {
	if err == nil {
		if w.hook != "" {
			return wrong
		}
		return answered
	}
	msg := err.Error()
	if !strings.Contains(msg, "denied the request") {
		return failed
	}
	if w.hook == "" {
		return wrong
	}
	if strings.Contains(msg, `admission webhook "`+w.hook+`" denied the request: `) && strings.Contains(msg, w.reason) {
		return answered
	}
	return wrong
}

var seq atomic.Int64

func uniqueName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }

// clientAs is a client impersonating user with groups, without
// client-side rate limits: the writers measure Steward, not client-go's
// token bucket.
func clientAs(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.RateLimiter = nil
	c, err := client.New(cfg, client.Options{Scheme: harness.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func kubectl(t *testing.T, ctx context.Context, stdin string, args ...string) {
	t.Helper()
	if _, _, err := env.Kubectl(ctx, stdin, args...); err != nil {
		t.Fatal(err)
	}
}

func createNamespaces(t *testing.T, ctx context.Context, names ...string) {
	t.Helper()
	for _, ns := range names {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
}

// Flux: kustomize-controller applied a ConfigMap for Kustomization
// flux-system/apps, which lists it in its inventory, and Kustomization
// flux-team-a/tenant, applied as its service account, lists another.
const (
	kustomizeLabels = `{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}`
	fluxSetup       = `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {interval: 10m, path: ./apps/prod, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: tenant, namespace: flux-team-a}
spec: {interval: 5m, path: ./team-a, prune: true, serviceAccountName: deployer, sourceRef: {kind: GitRepository, name: team-a}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: flux-apps, labels: ` + kustomizeLabels + `}
data: {a: "1"}
`
)

// Argo CD: the Application with the status its controller writes, and
// what the controller applied, each object tracked by its id; Argo CD
// would prune the ConfigMap.
const argoSetup = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
spec:
  project: default
  source: {repoURL: "https://github.com/argoproj/argocd-example-apps", path: guestbook, targetRevision: HEAD}
  destination: {server: "https://kubernetes.default.svc", namespace: guestbook}
  syncPolicy: {automated: {selfHeal: true, prune: false}}
status:
  sync: {status: Synced, revision: 53e28ff20cc530b9ada2173fbbd64d48338583ba}
  resources:
  - {version: v1, kind: Service, namespace: guestbook, name: guestbook-ui}
  - {version: v1, kind: ConfigMap, namespace: guestbook, name: retired, requiresPruning: true}
---
apiVersion: v1
kind: Service
metadata:
  name: guestbook-ui
  namespace: guestbook
  annotations: {"argocd.argoproj.io/tracking-id": "guestbook:/Service:guestbook/guestbook-ui"}
spec: {ports: [{port: 80}], selector: {app: guestbook-ui}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: retired
  namespace: guestbook
  annotations: {"argocd.argoproj.io/tracking-id": "guestbook:/ConfigMap:guestbook/retired"}
data: {a: "1"}
`

// setupWrites creates, as the owning tools would, what the writes need,
// and returns them: for fleetguard, fluxguard, argocdguard,
// installplanguard and claimguard a write Steward refuses, for most an
// allowed one Steward answers (a break-glass edit, or what the rule's
// cache shows to be allowed), and the agents' and controllers' own
// writes, which never reach Steward. Every write is a server-side dry
// run: the API server admits dry runs exactly as real writes (Steward's
// webhooks have no side effects), and nothing piles up.
func setupWrites(t *testing.T, ctx context.Context) []write {
	t.Helper()
	createNamespaces(t, ctx, fleetNS, "flux-system", fluxAppsNS, fluxTeamNS, "argocd", argoAppsNS, olmNS)
	admin := env.Client
	jane := clientAs(t, "jane", "devs")
	glass := clientAs(t, "jane", "devs", breakGlass)
	dryRun := client.DryRunAll
	merge := func(patch string) client.Patch { return client.RawPatch(types.MergePatchType, []byte(patch)) }
	edit := merge(`{"metadata":{"annotations":{"edited-by":"hand"}}}`)
	cm := func(ns, name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}

	// Fleet: what its agent deployed.
	agent := clientAs(t, fleetAgent)
	fleetCM := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fleetNS, Name: "settings",
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm", "objectset.rio.cattle.io/hash": "3e4c9a2f6b0d8e1a7c5b9d3f2e6a8c0b4d7f1e9a"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "web-app", "meta.helm.sh/release-namespace": fleetNS, "objectset.rio.cattle.io/id": "default-web-app"},
		},
		Data: map[string]string{"a": "1"},
	}
	if err := agent.Create(ctx, fleetCM); err != nil {
		t.Fatalf("the Fleet agent creating its ConfigMap: %v", err)
	}

	// Flux.
	kubectl(t, ctx, fluxSetup, "--as", kustomizeUser, "apply", "-f", "-")
	kubectl(t, ctx, "", "--as", kustomizeUser, "-n", "flux-system", "patch", "kustomization", "apps", "--subresource=status", "--type=merge", "-p",
		harness.FluxInventoryStatus("flux-apps_settings__ConfigMap"))
	kubectl(t, ctx, "", "--as", kustomizeUser, "-n", fluxTeamNS, "patch", "kustomization", "tenant", "--subresource=status", "--type=merge", "-p",
		harness.FluxInventoryStatus("flux-team-a_tenant-settings__ConfigMap"))
	kustomize := clientAs(t, kustomizeUser)
	tenant := clientAs(t, fluxTenantUser)

	// Argo CD.
	kubectl(t, ctx, argoSetup, "--as", argoController, "apply", "-f", "-")
	argo := clientAs(t, argoController)

	// OLM: a Subscription whose InstallPlan is installing.
	sub := olmObject("Subscription", "operator")
	_ = unstructured.SetNestedMap(sub.Object, map[string]any{"channel": "stable", "name": "operator", "source": "operatorhubio-catalog", "sourceNamespace": "olm"}, "spec")
	if err := admin.Create(ctx, sub); err != nil {
		t.Fatalf("creating the Subscription: %v", err)
	}
	plan := olmObject("InstallPlan", "install-abcde")
	plan.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: olmAPIVersion, Kind: "Subscription", Name: sub.GetName(), UID: sub.GetUID()}})
	_ = unstructured.SetNestedMap(plan.Object, map[string]any{"approval": "Automatic", "approved": true, "clusterServiceVersionNames": []any{"operator.v1.0.0"}}, "spec")
	if err := admin.Create(ctx, plan); err != nil {
		t.Fatalf("creating the InstallPlan: %v", err)
	}
	olm := clientAs(t, olmOperator)
	status, _ := json.Marshal(map[string]any{"status": map[string]any{"phase": "Installing", "catalogSources": []any{"operatorhubio-catalog"}}})
	if err := olm.Status().Patch(ctx, plan, client.RawPatch(types.MergePatchType, status)); err != nil {
		t.Fatalf("OLM setting the InstallPlan's phase: %v", err)
	}

	// Crossplane: a composite resource held in deletion by its finalizer
	// while it deletes what it composed.
	xr := compositeNamed(deletingXR)
	xr.SetFinalizers([]string{"composite.apiextensions.crossplane.io"})
	if err := admin.Create(ctx, xr); err != nil {
		t.Fatalf("creating the composite resource: %v", err)
	}
	if err := admin.Delete(ctx, compositeNamed(deletingXR)); err != nil {
		t.Fatalf("deleting the composite resource: %v", err)
	}

	return []write{
		{name: "fleetguard: hand edit", viaSteward: true, hook: "fleetguard.steward.dev", reason: "fleetguard: ConfigMap ha-fleet/settings is managed by Fleet",
			do: func(ctx context.Context) error {
				return jane.Patch(ctx, fleetCM.DeepCopy(), merge(`{"data":{"a":"2"}}`), dryRun)
			}},
		{name: "fleetguard: break-glass edit", viaSteward: true,
			do: func(ctx context.Context) error {
				return glass.Patch(ctx, fleetCM.DeepCopy(), merge(`{"data":{"a":"2"}}`), dryRun)
			}},
		{name: "fleetguard: agent", do: func(ctx context.Context) error {
			return agent.Patch(ctx, fleetCM.DeepCopy(), merge(`{"data":{"a":"3"}}`), dryRun)
		}},

		{name: "fluxguard: hand edit", viaSteward: true, hook: "fluxguard.steward.dev", reason: "fluxguard: ConfigMap flux-apps/settings is managed by Flux Kustomization flux-system/apps",
			do: func(ctx context.Context) error {
				return jane.Patch(ctx, cm(fluxAppsNS, "settings"), merge(`{"data":{"a":"2"}}`), dryRun)
			}},
		{name: "fluxguard: break-glass edit", viaSteward: true,
			do: func(ctx context.Context) error {
				return glass.Patch(ctx, cm(fluxAppsNS, "settings"), merge(`{"data":{"a":"2"}}`), dryRun)
			}},
		{name: "fluxguard: tenant's own object", viaSteward: true, do: func(ctx context.Context) error {
			obj := cm(fluxTeamNS, "tenant-settings")
			obj.Labels = map[string]string{"kustomize.toolkit.fluxcd.io/name": "tenant", "kustomize.toolkit.fluxcd.io/namespace": fluxTeamNS}
			return tenant.Create(ctx, obj, dryRun)
		}},
		{name: "fluxguard: controller", do: func(ctx context.Context) error {
			return kustomize.Patch(ctx, cm(fluxAppsNS, "settings"), merge(`{"data":{"a":"3"}}`), dryRun)
		}},

		{name: "argocdguard: hand edit", viaSteward: true, hook: "argocdguard.steward.dev", reason: "argocdguard: Service guestbook/guestbook-ui is managed by Argo CD Application argocd/guestbook",
			do: func(ctx context.Context) error {
				return jane.Patch(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: argoAppsNS, Name: "guestbook-ui"}}, edit, dryRun)
			}},
		{name: "argocdguard: edit of what Argo CD prunes", viaSteward: true,
			do: func(ctx context.Context) error { return jane.Patch(ctx, cm(argoAppsNS, "retired"), edit, dryRun) }},
		{name: "argocdguard: controller", do: func(ctx context.Context) error {
			return argo.Patch(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: argoAppsNS, Name: "guestbook-ui"}}, edit, dryRun)
		}},

		{name: "installplanguard: delete of an installing plan", viaSteward: true, hook: "installplanguard.steward.dev", reason: "installplanguard: InstallPlan ha-olm/install-abcde is Installing and owned by Subscription ha-olm/operator",
			do: func(ctx context.Context) error {
				return jane.Delete(ctx, olmObject("InstallPlan", "install-abcde"), dryRun)
			}},
		{name: "installplanguard: OLM", do: func(ctx context.Context) error {
			return olm.Patch(ctx, olmObject("InstallPlan", "install-abcde"), edit, dryRun)
		}},

		{name: "claimguard: XR re-created while deleting", viaSteward: true, hook: "claimguard.steward.dev", reason: "cannot be created yet",
			do: func(ctx context.Context) error { return jane.Create(ctx, compositeNamed(deletingXR), dryRun) }},
		{name: "claimguard: new XR", viaSteward: true,
			do: func(ctx context.Context) error { return jane.Create(ctx, compositeNamed(uniqueName("ha-db")), dryRun) }},
	}
}

func olmObject(kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(olmAPIVersion)
	u.SetKind(kind)
	u.SetNamespace(olmNS)
	u.SetName(name)
	return u
}

func compositeNamed(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(xrAPIVersion)
	u.SetKind("XPostgreSQLInstance")
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, int64(20), "spec", "parameters", "storageGB")
	return u
}

// waitAnswered waits until every write gets the answer a healthy Steward
// gives it from every replica: Steward's caches have seen the fixtures and
// claimguard's webhook rules name the composite kind. Each write must
// then get it ten times in a row.
func waitAnswered(t *testing.T, ctx context.Context, writes []write) {
	t.Helper()
	for _, w := range writes {
		streak := 0
		err := harness.Poll(ctx, 90*time.Second, func() error {
			err := w.do(ctx)
			if o := w.judge(err); o != answered {
				streak = 0
				return fmt.Errorf("%s: %s: %v", w.name, o, err)
			}
			if streak++; streak < 10 {
				return fmt.Errorf("%s: %d answers in a row", w.name, streak)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("before the load: %v", err)
		}
	}
}
