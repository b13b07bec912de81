package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/e2e/harness"
	"github.com/stewardhq/steward/webhooks/claimguard"
)

// everyServiceAccount are the ClusterRoles Kubernetes binds to every
// authenticated identity, Steward's service account included: API
// discovery, self access reviews, /version and /healthz.
var everyServiceAccount = []string{"system:discovery", "system:basic-user", "system:public-info-viewer"}

// TestStewardRunsOnTheRenderedRBAC runs a Steward whose every request to
// the API server is made as an identity holding only the ClusterRole
// rendered into manifests/base/rbac.yaml (plus what every service account
// has, and the per-group read access an installer grants claimguard for
// the sample Crossplane kinds). Every identity in this environment is a
// cluster-admin except system:anonymous, which is in no group; the proxy
// Steward talks through impersonates it. It proves:
//   - the rendered RBAC suffices: Steward becomes ready (every informer
//     syncs) and no request it makes is forbidden;
//   - Steward makes no API call on the request path: answering reviews
//     for objects in a namespace never reads from that namespace.
//
// It also logs the rendered grants Steward did not use in the run.
func TestStewardRunsOnTheRenderedRBAC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rendered := renderedClusterRole(t)
	grant := func(name string, rules []rbacv1.PolicyRule, existing string) {
		t.Helper()
		roleName := existing
		if existing == "" {
			roleName = "steward-e2e-" + name
			role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName}, Rules: rules}
			if err := env.Client.Create(ctx, role); err != nil {
				t.Fatalf("creating ClusterRole %s: %v", roleName, err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), role) })
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "steward-e2e-anonymous-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: anonymous}},
		}
		if err := env.Client.Create(ctx, binding); err != nil {
			t.Fatalf("creating ClusterRoleBinding %s: %v", binding.Name, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), binding) })
	}
	grant("rendered", rendered.Rules, "")
	grant("claimguard-kinds", claimguard.SandboxRBAC(), "")
	// The rendered Role in Steward's namespace: the Lease of leader
	// election, which this Steward asks for while the shared one holds it.
	leader := renderedRole(t, "steward-leader-election")
	leader.ObjectMeta = metav1.ObjectMeta{Name: "steward-e2e-leader-election", Namespace: harness.StewardNamespace}
	if err := env.Client.Create(ctx, &leader); err != nil {
		t.Fatalf("creating Role %s: %v", leader.Name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), &leader) })
	leaderBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "steward-e2e-anonymous-leader-election", Namespace: harness.StewardNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: leader.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: anonymous}},
	}
	if err := env.Client.Create(ctx, leaderBinding); err != nil {
		t.Fatalf("creating RoleBinding %s: %v", leaderBinding.Name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), leaderBinding) })
	for _, name := range everyServiceAccount {
		grant(strings.ReplaceAll(name, ":", "-"), nil, name)
	}
	// RBAC changes reach the authorizer through informers.
	probes := []authorizationv1.ResourceAttributes{{Verb: "list", Group: "database.aws.example.org", Resource: "rdsinstances"}}
	for _, r := range rendered.Rules {
		attrs := authorizationv1.ResourceAttributes{Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: r.Resources[0]}
		if len(r.ResourceNames) > 0 {
			attrs.Name = r.ResourceNames[0]
		}
		probes = append(probes, attrs)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		for _, attrs := range probes {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: anonymous, ResourceAttributes: &attrs}}
			if err := env.Client.Create(ctx, sar); err != nil {
				return err
			}
			if !sar.Status.Allowed {
				return fmt.Errorf("%s is not allowed to %s %s.%s yet", anonymous, attrs.Verb, attrs.Resource, attrs.Group)
			}
		}
		return nil
	})

	ns := testNamespace(t, ctx, "rbac-usage")
	proxy := startAPIProxy(t, anonymous)
	// It keeps the registration as the Deployment does, pointed where the
	// harness registered it: its watches of the two configurations and of
	// its Deployment, by name, must be allowed by resourceNames.
	p := startStewardProc(t, ctx, procOptions{kubeconfig: proxy.kubeconfig, args: []string{
		"--keep-registration", "--registration-url", fmt.Sprintf("https://127.0.0.1:%d", env.Steward.Port()),
	}})
	// Settle: start-up requests are done once Steward is ready.
	time.Sleep(2 * time.Second)

	t.Run("MetricsAreReviewedWithTheRenderedGrants", func(t *testing.T) {
		// Steward asks the API server about a scraper's token and access
		// as the identity holding only the rendered ClusterRole.
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: harness.StewardNamespace, Name: harness.MetricsScraper}}
		tr := &authenticationv1.TokenRequest{}
		if err := env.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", p.metricsPort), nil)
		req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
		resp, err := insecureClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("an authorized scrape of Steward running on the rendered RBAC: HTTP %d, want 200", resp.StatusCode)
		}
	})

	t.Run("NoAPICallOnTheRequestPath", func(t *testing.T) {
		before := len(proxy.requests())
		c := webhookClient(pool(p.ca.pem))
		for _, wh := range servedWebhooks() {
			for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Delete, "SCALE"} {
				subresource := ""
				if op == "SCALE" {
					// A scale request makes fleetguard read the workload's
					// metadata, from its cache.
					op, subresource = admissionv1.Update, "scale"
				}
				obj := mustJSON(t, map[string]any{
					"apiVersion": "apps/v1", "kind": "Deployment",
					"metadata": map[string]any{"name": "web", "namespace": ns, "labels": map[string]string{fleetHashLabel: "x"}},
					"spec":     map[string]any{"replicas": 1},
				})
				req := janeRequest(op, metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
					metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, ns, "web", obj, obj)
				req.SubResource = subresource
				body := reviewJSON(t, req)
				if _, err := postReview(ctx, c, p.url(wh.Path), "application/json", bytes.NewReader(body)); err != nil {
					t.Fatalf("%s %s: %v", wh.Path, op, err)
				}
			}
		}
		time.Sleep(time.Second)
		for _, r := range proxy.requests()[before:] {
			if strings.Contains(r.path, "/namespaces/"+ns+"/") || strings.HasSuffix(r.path, "/namespaces/"+ns) {
				t.Errorf("answering reviews for objects in %s, Steward called the API server: %s %s?%s", ns, r.method, r.path, r.query)
			}
		}
	})

	t.Run("RefusalEventIsRecordedWithTheRenderedGrants", func(t *testing.T) {
		// A GitOps agent's refused write leaves an Event, created with the
		// rendered grants on events.events.k8s.io.
		deployment := func(replicas int) []byte {
			return mustJSON(t, map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": "web-events", "namespace": ns, "uid": "0b7c6f0e-5d1a-4c7e-9f59-2a1f3c4d5e6f", "labels": map[string]string{fleetHashLabel: "x"}},
				"spec":     map[string]any{"replicas": replicas},
			})
		}
		req := janeRequest(admissionv1.Update, metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
			metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, ns, "web-events", deployment(2), deployment(1))
		req.UserInfo = authenticationv1.UserInfo{Username: kustomizeController, Groups: kustomizeControllerGroups}
		res, err := postReview(ctx, webhookClient(pool(p.ca.pem)), p.url("/validate/fleetguard"), "application/json", bytes.NewReader(reviewJSON(t, req)))
		if err != nil {
			t.Fatal(err)
		}
		if res.review.Response == nil || res.review.Response.Allowed {
			t.Fatalf("fleetguard did not refuse kustomize-controller's change of a Fleet-managed Deployment: %s", res)
		}
		path := "/apis/events.k8s.io/v1/namespaces/" + ns + "/events"
		harness.Eventually(t, 30*time.Second, func() error {
			for _, r := range proxy.requests() {
				if r.method == http.MethodPost && r.path == path {
					if r.status != http.StatusCreated {
						return fmt.Errorf("creating the Event: HTTP %d", r.status)
					}
					return nil
				}
			}
			return fmt.Errorf("no Event created at %s yet", path)
		})
	})

	requests := proxy.requests()
	used := map[string]bool{}
	for _, r := range requests {
		if r.status == http.StatusForbidden {
			t.Errorf("under the rendered RBAC, Steward's request was forbidden: %s %s?%s", r.method, r.path, r.query)
		}
		if g, ok := grantOf(r); ok {
			used[g] = true
			if strings.Contains(r.query, "sendInitialEvents=true") {
				// client-go's watch-list: the initial list, streamed.
				used[strings.Replace(g, "watch ", "list ", 1)] = true
			}
		}
	}
	var unused []string
	for _, rule := range rendered.Rules {
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, verb := range rule.Verbs {
					if !used[verb+" "+res+"."+group] {
						unused = append(unused, verb+" "+res+"."+group)
					}
				}
			}
		}
	}
	sort.Strings(unused)
	t.Logf("%d requests to the API server, all allowed; rendered grants not used in this run: %v", len(requests), unused)
	if p.exited() {
		t.Errorf("steward exited:\n%s", tail(p.log(), 20))
	}
}

// renderedClusterRole reads Steward's ClusterRole from the base manifests.
func renderedClusterRole(t *testing.T) rbacv1.ClusterRole {
	return renderedRBAC[rbacv1.ClusterRole](t, "ClusterRole", "steward")
}

// renderedRole reads one of Steward's Roles from the base manifests.
func renderedRole(t *testing.T, name string) rbacv1.Role {
	return renderedRBAC[rbacv1.Role](t, "Role", name)
}

// renderedRBAC reads the object of a kind and name from the base
// manifests' rbac.yaml.
func renderedRBAC[T any](t *testing.T, kind, name string) T {
	t.Helper()
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "manifests", "base", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out T
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var head metav1.PartialObjectMetadata
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		if head.Kind == kind && head.Name == name {
			if err := yaml.Unmarshal([]byte(doc), &out); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatalf("manifests/base/rbac.yaml has no %s %s", kind, name)
	return out
}

// grantOf turns a request into "verb resource.group", as RBAC sees it.
func grantOf(r apiRequest) (string, bool) {
	parts := strings.Split(strings.Trim(r.path, "/"), "/")
	var group string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		group, parts = "", parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		return "", false // discovery and other non-resource URLs
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		parts = parts[2:]
	}
	resource := parts[0]
	named := len(parts) >= 2
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	verb := map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch", http.MethodDelete: "delete"}[r.method]
	if r.method == http.MethodGet {
		switch {
		case strings.Contains(r.query, "watch=true") || strings.Contains(r.query, "watch=1"):
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	}
	if verb == "" {
		return "", false
	}
	return verb + " " + resource + "." + group, true
}
