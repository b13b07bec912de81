package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestSampleCRDsAreEstablishedAndServed proves that every CRD anyone
// scripts against, sample or upstream, exists under its documented name,
// scope and kind, and answers at each of its served versions.
func TestSampleCRDsAreEstablishedAndServed(t *testing.T) {
	cases := map[string]struct {
		kind       string
		scope      apiextensionsv1.ResourceScope
		served     []string
		storage    string
		deprecated []string
		categories []string
	}{
		"compositeresourcedefinitions.apiextensions.crossplane.io": {kind: "CompositeResourceDefinition", scope: apiextensionsv1.ClusterScoped, served: []string{"v1", "v2"}, storage: "v1", deprecated: []string{"v1"}},
		"xpostgresqlinstances.database.example.org":                {kind: "XPostgreSQLInstance", scope: apiextensionsv1.ClusterScoped, served: []string{"v1alpha1"}, storage: "v1alpha1"},
		"postgresqlinstances.database.example.org":                 {kind: "PostgreSQLInstance", scope: apiextensionsv1.NamespaceScoped, served: []string{"v1alpha1"}, storage: "v1alpha1"},
		"rdsinstances.database.aws.example.org":                    {kind: "RDSInstance", scope: apiextensionsv1.ClusterScoped, served: []string{"v1beta1"}, storage: "v1beta1", categories: []string{"crossplane", "managed"}},
		"kustomizations.kustomize.toolkit.fluxcd.io":               {kind: "Kustomization", scope: apiextensionsv1.NamespaceScoped, served: []string{"v1", "v1beta1", "v1beta2"}, storage: "v1", deprecated: []string{"v1beta1", "v1beta2"}},
		"helmreleases.helm.toolkit.fluxcd.io":                      {kind: "HelmRelease", scope: apiextensionsv1.NamespaceScoped, served: []string{"v2", "v2beta1", "v2beta2"}, storage: "v2", deprecated: []string{"v2beta1", "v2beta2"}},
		"gitrepositories.source.toolkit.fluxcd.io":                 {kind: "GitRepository", scope: apiextensionsv1.NamespaceScoped, served: []string{"v1", "v1beta1", "v1beta2"}, storage: "v1", deprecated: []string{"v1beta1", "v1beta2"}},
		"subscriptions.operators.coreos.com":                       {kind: "Subscription", scope: apiextensionsv1.NamespaceScoped, served: []string{"v1alpha1"}, storage: "v1alpha1"},
		"installplans.operators.coreos.com":                        {kind: "InstallPlan", scope: apiextensionsv1.NamespaceScoped, served: []string{"v1alpha1"}, storage: "v1alpha1"},
		"clusterserviceversions.operators.coreos.com":              {kind: "ClusterServiceVersion", scope: apiextensionsv1.NamespaceScoped, served: []string{"v1alpha1"}, storage: "v1alpha1"},
		"roles.postgresql.sql.crossplane.io":                       {kind: "Role", scope: apiextensionsv1.ClusterScoped, served: []string{"v1alpha1"}, storage: "v1alpha1", categories: []string{"crossplane", "managed", "sql"}},
		"databases.postgresql.sql.crossplane.io":                   {kind: "Database", scope: apiextensionsv1.ClusterScoped, served: []string{"v1alpha1"}, storage: "v1alpha1", categories: []string{"crossplane", "managed", "sql"}},
		"roles.postgresql.sql.m.crossplane.io":                     {kind: "Role", scope: apiextensionsv1.NamespaceScoped, served: []string{"v1alpha1"}, storage: "v1alpha1", categories: []string{"crossplane", "managed", "sql"}},
		"databases.postgresql.sql.m.crossplane.io":                 {kind: "Database", scope: apiextensionsv1.NamespaceScoped, served: []string{"v1alpha1"}, storage: "v1alpha1", categories: []string{"crossplane", "managed", "sql"}},
	}
	ctx := context.Background()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				t.Fatalf("getting CRD: %v", err)
			}
			for _, c := range []apiextensionsv1.CustomResourceDefinitionConditionType{apiextensionsv1.Established, apiextensionsv1.NamesAccepted} {
				if !crdCondition(crd, c) {
					t.Errorf("condition %s is not True: %+v", c, crd.Status.Conditions)
				}
			}
			if crd.Spec.Names.Kind != tc.kind || crd.Spec.Scope != tc.scope {
				t.Errorf("kind %s scope %s, want %s %s", crd.Spec.Names.Kind, crd.Spec.Scope, tc.kind, tc.scope)
			}
			var served, deprecated []string
			storage := ""
			for _, v := range crd.Spec.Versions {
				if v.Subresources == nil || v.Subresources.Status == nil {
					t.Errorf("version %s has no status subresource", v.Name)
				}
				if v.Served {
					served = append(served, v.Name)
				}
				if v.Storage {
					storage = v.Name
				}
				if v.Deprecated {
					deprecated = append(deprecated, v.Name)
					if v.DeprecationWarning == nil || !strings.Contains(*v.DeprecationWarning, "deprecated") {
						t.Errorf("version %s is deprecated without a deprecation warning", v.Name)
					}
				}
			}
			if diff := cmp.Diff(tc.served, served); diff != "" {
				t.Errorf("served versions (-want +got):\n%s", diff)
			}
			if storage != tc.storage {
				t.Errorf("storage version %q, want %q", storage, tc.storage)
			}
			if diff := cmp.Diff(tc.deprecated, deprecated); diff != "" {
				t.Errorf("deprecated versions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.categories, crd.Spec.Names.Categories, cmpopts.EquateEmpty(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); tc.categories != nil && diff != "" {
				t.Errorf("categories (-want +got):\n%s", diff)
			}
			if len(served) > 1 && crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
				t.Errorf("conversion strategy %s, want None", crd.Spec.Conversion.Strategy)
			}
			// Listing through every served version proves the API server
			// serves it, not just that the CRD says so.
			for _, v := range served {
				list := &unstructured.UnstructuredList{}
				list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: v, Kind: crd.Spec.Names.ListKind})
				if err := env.Client.List(ctx, list); err != nil {
					t.Errorf("listing %s at %s: %v", name, v, err)
				}
			}
		})
	}
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// TestSampleXRDIsInstalledWithItsStatus proves the XRD object exists with
// the claim names and the status Crossplane would have written, so rules that
// map claims to XRs find it.
func TestSampleXRDIsInstalledWithItsStatus(t *testing.T) {
	xrd := &unstructured.Unstructured{}
	xrd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.crossplane.io", Version: "v1", Kind: "CompositeResourceDefinition"})
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "xpostgresqlinstances.database.example.org"}, xrd); err != nil {
		t.Fatalf("getting the XRD: %v", err)
	}
	got := map[string]string{}
	for field, path := range map[string][]string{
		"claimKind":   {"spec", "claimNames", "kind"},
		"claimPlural": {"spec", "claimNames", "plural"},
		"group":       {"spec", "group"},
		"xrKind":      {"status", "controllers", "compositeResourceType", "kind"},
		"xrVersion":   {"status", "controllers", "compositeResourceType", "apiVersion"},
		"claimType":   {"status", "controllers", "compositeResourceClaimType", "kind"},
	} {
		got[field], _, _ = unstructured.NestedString(xrd.Object, path...)
	}
	want := map[string]string{
		"claimKind":   "PostgreSQLInstance",
		"claimPlural": "postgresqlinstances",
		"group":       "database.example.org",
		"xrKind":      "XPostgreSQLInstance",
		"xrVersion":   "database.example.org/v1alpha1",
		"claimType":   "PostgreSQLInstance",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("XRD fields (-want +got):\n%s", diff)
	}
}

// TestStewardIsReadyAndServesMetrics proves the harness left a running,
// ready Steward whose metrics endpoint parses.
func TestStewardIsReadyAndServesMetrics(t *testing.T) {
	s := env.Steward
	if s == nil || !s.Running() {
		t.Fatal("steward is not running")
	}
	for _, path := range []string{"/readyz", "/healthz"} {
		resp, err := http.Get(s.HealthURL(path))
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s, want 200", path, resp.Status)
		}
	}
	if _, err := s.Counter("steward_decisions_total", nil); err != nil {
		t.Errorf("reading a counter: %v", err)
	}
	text, err := s.MetricsText()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "# TYPE ") {
		t.Errorf("metrics are not in the Prometheus text format:\n%.500s", text)
	}
}

// TestRegisteredWebhooksAreTheRenderedOnes proves the API server holds the
// webhook configurations exactly as rendered into manifests/base/webhooks.yaml
// (rules, selectors, matchConditions, failure policies, timeouts), except the
// clientConfig, which points at the local Steward with the harness's CA.
func TestRegisteredWebhooksAreTheRenderedOnes(t *testing.T) {
	rendered, err := harness.RenderedWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ignoreClientConfig := cmpopts.IgnoreFields(admissionregistrationv1.ValidatingWebhook{}, "ClientConfig")
	ignoreMutatingClientConfig := cmpopts.IgnoreFields(admissionregistrationv1.MutatingWebhook{}, "ClientConfig")

	if rendered.Validating != nil {
		got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: rendered.Validating.Name}, got); err != nil {
			t.Fatalf("getting the registered ValidatingWebhookConfiguration: %v", err)
		}
		want := rendered.Validating.DeepCopy()
		for i := range want.Webhooks {
			defaultValidating(&want.Webhooks[i])
			if len(want.Webhooks[i].Rules) == 0 && i < len(got.Webhooks) {
				// Rendered without rules: Steward fills them in at runtime
				// (claimguard, from the XRDs it finds). They must be
				// Steward's, never written by the harness.
				want.Webhooks[i].Rules = got.Webhooks[i].Rules
				checkRulesNotOwnedByHarness(t, got.ManagedFields, want.Webhooks[i].Name)
			}
		}
		if diff := cmp.Diff(want.Webhooks, got.Webhooks, ignoreClientConfig, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("registered validating webhooks differ from the rendered ones (-rendered +registered):\n%s", diff)
		}
		compareMeta(t, want.ObjectMeta, got.ObjectMeta)
		for i, w := range got.Webhooks {
			checkClientConfig(t, w.Name, rendered.Validating.Webhooks[i].ClientConfig, w.ClientConfig)
		}
	}
	if rendered.Mutating != nil {
		got := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: rendered.Mutating.Name}, got); err != nil {
			t.Fatalf("getting the registered MutatingWebhookConfiguration: %v", err)
		}
		want := rendered.Mutating.DeepCopy()
		for i := range want.Webhooks {
			defaultMutating(&want.Webhooks[i])
			if len(want.Webhooks[i].Rules) == 0 && i < len(got.Webhooks) {
				want.Webhooks[i].Rules = got.Webhooks[i].Rules
				checkRulesNotOwnedByHarness(t, got.ManagedFields, want.Webhooks[i].Name)
			}
		}
		if diff := cmp.Diff(want.Webhooks, got.Webhooks, ignoreMutatingClientConfig, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("registered mutating webhooks differ from the rendered ones (-rendered +registered):\n%s", diff)
		}
		compareMeta(t, want.ObjectMeta, got.ObjectMeta)
		for i, w := range got.Webhooks {
			checkClientConfig(t, w.Name, rendered.Mutating.Webhooks[i].ClientConfig, w.ClientConfig)
		}
	}
}

// TestImpersonatedUsersAreRefusedOnlyBySteward proves that RBAC lets any
// impersonated user through, through both the client and kubectl, so that
// rule tests observe Steward's decisions.
func TestImpersonatedUsersAreRefusedOnlyBySteward(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	jane, err := env.As("jane", "devs")
	if err != nil {
		t.Fatal(err)
	}
	if err := jane.List(ctx, &apiextensionsv1.CustomResourceDefinitionList{}); err != nil {
		t.Errorf("jane cannot list CRDs: %v", err)
	}
	out, _, err := env.Kubectl(ctx, "", "--as", "jane", "--as-group", "devs", "auth", "can-i", "delete", "deployments", "-n", "default")
	if err != nil || strings.TrimSpace(out) != "yes" {
		t.Errorf("kubectl auth can-i as jane: %q, %v; want yes", out, err)
	}
}

// defaultValidating applies the API server's documented defaults for
// admissionregistration.k8s.io/v1, so a rendered webhook that leaves a field
// to its default compares equal to what the API server stores.
func defaultValidating(w *admissionregistrationv1.ValidatingWebhook) {
	defaultCommon(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules)
}

func defaultMutating(w *admissionregistrationv1.MutatingWebhook) {
	defaultCommon(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules)
	if w.ReinvocationPolicy == nil {
		never := admissionregistrationv1.NeverReinvocationPolicy
		w.ReinvocationPolicy = &never
	}
}

func defaultCommon(fp **admissionregistrationv1.FailurePolicyType, mp **admissionregistrationv1.MatchPolicyType, ns, obj **metav1.LabelSelector, timeout **int32, rules []admissionregistrationv1.RuleWithOperations) {
	if *fp == nil {
		fail := admissionregistrationv1.Fail
		*fp = &fail
	}
	if *mp == nil {
		eq := admissionregistrationv1.Equivalent
		*mp = &eq
	}
	if *ns == nil {
		*ns = &metav1.LabelSelector{}
	}
	if *obj == nil {
		*obj = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		ten := int32(10)
		*timeout = &ten
	}
	for i := range rules {
		if rules[i].Scope == nil {
			all := admissionregistrationv1.AllScopes
			rules[i].Scope = &all
		}
	}
}

// compareMeta checks the labels and annotations (which carry the failure
// policy reasons) survived registration.
func compareMeta(t *testing.T, want, got metav1.ObjectMeta) {
	t.Helper()
	if diff := cmp.Diff(want.Labels, got.Labels, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s: labels (-rendered +registered):\n%s", want.Name, diff)
	}
	if diff := cmp.Diff(want.Annotations, got.Annotations, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s: annotations (-rendered +registered):\n%s", want.Name, diff)
	}
}

// checkRulesNotOwnedByHarness fails when the harness's field manager owns
// the rules of the named webhook: the harness must register rendered fields
// only, and the rendered file has none there.
func checkRulesNotOwnedByHarness(t *testing.T, managed []metav1.ManagedFieldsEntry, webhook string) {
	t.Helper()
	key := fmt.Sprintf(`k:{"name":%q}`, webhook)
	for _, m := range managed {
		if m.Manager != harness.FieldManager || m.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]map[string]any
		if err := json.Unmarshal(m.FieldsV1.GetRawBytes(), &fields); err != nil {
			t.Fatalf("decoding managedFields: %v", err)
		}
		if _, ok := fields["f:webhooks"][key]["f:rules"]; ok {
			t.Errorf("%s: the harness owns rules the rendered file does not have", webhook)
		}
	}
}

// checkClientConfig checks a registered clientConfig points at the local
// Steward, at the rendered Service's path, trusting the harness's CA.
func checkClientConfig(t *testing.T, name string, rendered, got admissionregistrationv1.WebhookClientConfig) {
	t.Helper()
	if rendered.Service == nil || rendered.Service.Path == nil {
		t.Errorf("%s: rendered clientConfig has no service path: %+v", name, rendered)
		return
	}
	if rendered.Service.Name != "steward" || rendered.Service.Namespace != harness.StewardNamespace {
		t.Errorf("%s: rendered clientConfig names Service %s/%s, want %s/steward", name, rendered.Service.Namespace, rendered.Service.Name, harness.StewardNamespace)
	}
	want := env.Steward.URL(*rendered.Service.Path)
	if got.URL == nil || *got.URL != want || got.Service != nil {
		t.Errorf("%s: registered clientConfig %+v, want url %s", name, got, want)
	}
	if string(got.CABundle) != string(env.Steward.CABundle()) {
		t.Errorf("%s: registered caBundle is not the harness's CA", name)
	}
}

// TestStewardRestartsKeepWebhooksPointedAtIt proves both ways of restarting:
// Restart keeps the port (the registration stays valid), RestartSteward
// starts a new process on a new port and re-registers the webhooks for it.
func TestStewardRestartsKeepWebhooksPointedAtIt(t *testing.T) {
	env.LogOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	s := env.Steward
	port, pid := s.Port(), s.PID()
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if s.Port() != port || s.PID() == pid || !s.Running() {
		t.Errorf("after Restart: port %d (was %d), pid %d (was %d), running %v; want the same port, a new process", s.Port(), port, s.PID(), pid, s.Running())
	}

	restarted, err := env.RestartSteward(ctx, harness.DefaultConfig)
	if err != nil {
		t.Fatalf("RestartSteward: %v", err)
	}
	if env.Steward != restarted || s.Running() {
		t.Fatalf("after RestartSteward: env.Steward is the new process %v, old one running %v", env.Steward == restarted, s.Running())
	}
	rendered, err := harness.RenderedWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	if rendered.Validating != nil {
		got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, got); err != nil {
			t.Fatal(err)
		}
		for i, w := range got.Webhooks {
			checkClientConfig(t, w.Name, rendered.Validating.Webhooks[i].ClientConfig, w.ClientConfig)
		}
	}
}

// TestSelfManagedStewardInjectsItsOwnCA proves the harness's self-managed
// variant: no certificates from the harness, clientConfig URLs by the name
// Steward's certificate is issued for, and a caBundle Steward wrote itself.
func TestSelfManagedStewardInjectsItsOwnCA(t *testing.T) {
	env.LogOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := env.RestartSteward(ctx, harness.DefaultConfig); err != nil {
			t.Errorf("restoring the default Steward: %v", err)
		}
		// The Secret the harness created for Steward to fill.
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: harness.StewardNamespace, Name: "steward-serving-cert"}}
		if err := env.Client.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting the self-managed Secret: %v", err)
		}
	})
	s, err := env.RestartSteward(ctx, harness.DefaultConfig, "--cert-mode=self-managed")
	if err != nil {
		t.Fatalf("RestartSteward self-managed: %v", err)
	}
	if s.CABundle() != nil {
		t.Error("the harness provided a CA in self-managed mode")
	}
	rendered, err := harness.RenderedWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	if rendered.Validating == nil {
		t.Fatal("the rendered file has no ValidatingWebhookConfiguration")
	}
	got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, got); err != nil {
		t.Fatal(err)
	}
	for i, w := range got.Webhooks {
		want := s.URL(*rendered.Validating.Webhooks[i].ClientConfig.Service.Path)
		if w.ClientConfig.URL == nil || *w.ClientConfig.URL != want || !strings.HasPrefix(want, "https://localhost:") {
			t.Errorf("%s: url %v, want %s", w.Name, w.ClientConfig.URL, want)
		}
		if len(w.ClientConfig.CABundle) == 0 {
			t.Errorf("%s: Steward injected no caBundle", w.Name)
		}
	}
}
