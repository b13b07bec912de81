package e2e

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
	"github.com/stewardhq/steward/webhooks/claimguard"
)

// TestWatchedKindsReportAFluxKindSuspendnoticeFollows follows one Flux kind
// (Buckets) that suspendnotice caches through its life in a running
// cluster, in Steward's own /metrics: installed, it is synced at the version
// it serves; an upgrade adds a version the cluster prefers but cannot list
// (its conversion webhook does not answer), and the new version shows as
// syncing while the old one, synced, keeps answering; once the new version
// lists, it alone is reported, synced; deleted, the kind has no series at
// all. Steward stays ready throughout: a kind that cannot be listed is the
// metric's and the alert's to report, not a reason to stop answering every
// webhook.
func TestWatchedKindsReportAFluxKindSuspendnoticeFollows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	// A name of its own: a deleted namespace stays Terminating here (no
	// namespace controller), and the test may run again in one process.
	ns := testNamespace(t, ctx, fmt.Sprintf("watched-kinds-%d", time.Now().UnixNano()%1_000_000))
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "buckets.source.toolkit.fluxcd.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    "source.toolkit.fluxcd.io",
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "Bucket", ListKind: "BucketList", Plural: "buckets", Singular: "bucket"},
			Scope:    apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{snCRDVersion("v1beta2", true, true)},
		},
	}
	if err := env.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), crd); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing the CRD: %v", err)
		}
	})
	expect := func(what string, want map[string]string) {
		t.Helper()
		harness.Eventually(t, 90*time.Second, func() error {
			got, err := bucketsWatched()
			if err != nil {
				return err
			}
			if !maps.Equal(got, want) {
				return fmt.Errorf("%s: steward_watched_kinds{rule=suspendnotice,resource=buckets} by version = %v, want %v", what, got, want)
			}
			return nil
		})
		expectReady(t)
	}
	expect("installed", map[string]string{"v1beta2": "synced"})

	bucket := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1beta2",
		"kind":       "Bucket",
		"metadata":   map[string]any{"name": "assets", "namespace": ns},
		"spec":       map[string]any{"interval": "5m", "bucketName": "assets", "endpoint": "minio.example.org"},
	}}
	harness.Eventually(t, 30*time.Second, func() error { return env.Client.Create(ctx, bucket) })

	// The upgrade: v1 is served and preferred, but every object is stored
	// at v1beta2 and the conversion webhook does not answer, so v1 cannot
	// be listed.
	updateCRD(ctx, t, crd, func() {
		crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{snCRDVersion("v1beta2", true, true), snCRDVersion("v1", true, false)}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/convert")},
				ConversionReviewVersions: []string{"v1"},
			},
		}
	})
	expect("v1 cannot be listed", map[string]string{"v1beta2": "synced", "v1": "syncing"})

	updateCRD(ctx, t, crd, func() {
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	})
	expect("v1 lists", map[string]string{"v1": "synced"})

	if err := env.Client.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	expect("the CRD is deleted", map[string]string{})
}

// bucketsWatched reads suspendnotice's Buckets from Steward's metrics: the
// state of each version watched.
func bucketsWatched() (map[string]string, error) {
	text, err := env.Steward.MetricsText()
	if err != nil {
		return nil, err
	}
	families, err := harness.ParseMetrics(text)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range families["steward_watched_kinds"].GetMetric() {
		if !harness.HasLabels(m, map[string]string{"rule": "suspendnotice", "group": "source.toolkit.fluxcd.io", "resource": "buckets"}) {
			continue
		}
		if m.GetGauge().GetValue() != 1 {
			return nil, fmt.Errorf("steward_watched_kinds %v = %v, want 1", m.GetLabel(), m.GetGauge().GetValue())
		}
		out[labelValue(m, "version")] = labelValue(m, "state")
	}
	return out, nil
}

// updateCRD applies change to the CRD as stored, retrying on conflicts.
func updateCRD(ctx context.Context, t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, change func()) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return err
		}
		change()
		return env.Client.Update(ctx, crd)
	})
}

// expectReady fails unless Steward reports ready.
func expectReady(t *testing.T) {
	t.Helper()
	resp, err := http.Get(env.Steward.HealthURL("/readyz"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz = %d, want 200: Steward must stay ready", resp.StatusCode)
	}
}

// TestWatchedKindForbiddenByRBACIsReported runs a Steward whose every API
// call is made as an identity holding Steward's rendered ClusterRole less
// list and watch on GitRepositories, a Flux kind the cluster serves and
// suspendnotice caches. Steward becomes ready all the same (a kind it may
// not list does not hold readiness back), and its metrics name the kind
// forbidden; once RBAC grants it, the kind syncs without a restart.
func TestWatchedKindForbiddenByRBACIsReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const group, resource = "source.toolkit.fluxcd.io", "gitrepositories"
	rendered := renderedClusterRole(t)
	var rules []rbacv1.PolicyRule
	for _, r := range rendered.Rules {
		if slices.Contains(r.APIGroups, group) {
			r.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(s string) bool { return s == resource })
			if len(r.Resources) == 0 {
				continue
			}
		}
		rules = append(rules, r)
	}
	grant := func(name string, rules []rbacv1.PolicyRule, existing string) {
		t.Helper()
		roleName := existing
		if existing == "" {
			roleName = "steward-e2e-watched-" + name
			role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName}, Rules: rules}
			if err := env.Client.Create(ctx, role); err != nil {
				t.Fatalf("creating ClusterRole %s: %v", roleName, err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), role) })
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "steward-e2e-watched-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: anonymous}},
		}
		if err := env.Client.Create(ctx, binding); err != nil {
			t.Fatalf("creating ClusterRoleBinding %s: %v", binding.Name, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), binding) })
	}
	allowed := func(verb, group, resource string) func() error {
		return func() error {
			attrs := authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource}
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: anonymous, ResourceAttributes: &attrs}}
			if err := env.Client.Create(ctx, sar); err != nil {
				return err
			}
			if !sar.Status.Allowed {
				return fmt.Errorf("%s may not %s %s.%s yet", anonymous, verb, resource, group)
			}
			return nil
		}
	}
	grant("rendered-less-gitrepositories", rules, "")
	grant("claimguard-kinds", claimguard.SandboxRBAC(), "")
	for _, name := range everyServiceAccount {
		grant(strings.ReplaceAll(name, ":", "-"), nil, name)
	}
	// RBAC changes reach the authorizer through informers.
	harness.Eventually(t, 30*time.Second, allowed("list", "kustomize.toolkit.fluxcd.io", "kustomizations"))
	harness.Eventually(t, 30*time.Second, allowed("create", "authentication.k8s.io", "tokenreviews"))
	if allowed("list", group, resource)() == nil {
		t.Fatalf("%s may list %s.%s: the test needs it forbidden", anonymous, resource, group)
	}

	proxy := startAPIProxy(t, anonymous)
	p := startStewardProc(t, ctx, procOptions{kubeconfig: proxy.kubeconfig}) // waits until ready

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: harness.StewardNamespace, Name: harness.MetricsScraper}}
	tr := &authenticationv1.TokenRequest{}
	if err := env.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatal(err)
	}
	states := func() (map[string]string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", p.metricsPort), nil)
		req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
		resp, err := insecureClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("scraping the extra Steward: HTTP %d, %v", resp.StatusCode, err)
		}
		families, err := harness.ParseMetrics(string(body))
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, m := range families["steward_watched_kinds"].GetMetric() {
			if labelValue(m, "rule") == "suspendnotice" {
				out[labelValue(m, "resource")] = labelValue(m, "state")
			}
		}
		return out, nil
	}
	expect := func(what string, want map[string]string) {
		t.Helper()
		harness.Eventually(t, 90*time.Second, func() error {
			got, err := states()
			if err != nil {
				return err
			}
			for res, st := range want {
				if got[res] != st {
					return fmt.Errorf("%s: suspendnotice's steward_watched_kinds by resource = %v, want %s %s", what, got, res, st)
				}
			}
			return nil
		})
		if code, _, err := p.readyz(); err != nil || code != http.StatusOK {
			t.Fatalf("%s: /readyz = %d, %v; want 200", what, code, err)
		}
	}
	expect("list forbidden", map[string]string{resource: "forbidden", "kustomizations": "synced", "helmreleases": "synced"})

	grant("gitrepositories", []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{"list", "watch"}}}, "")
	expect("granted", map[string]string{resource: "synced", "kustomizations": "synced", "helmreleases": "synced"})
}
