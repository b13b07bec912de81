package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
	"github.com/stewardhq/steward/webhooks/claimguard"
	"github.com/stewardhq/steward/webhooks/rule"
)

// The tests play Crossplane's part (no Crossplane runs here): they create
// XRs and composed MRs with Crossplane's labels, owner references and
// finalizers, delete with Foreground propagation, and play the garbage
// collector and the provider by deleting MRs and removing finalizers.
const (
	claimguardHook        = `admission webhook "claimguard.steward.dev" denied the request: `
	claimguardManagedHook = `admission webhook "claimguard-managed.steward.dev" denied the request: `
	crossplaneUser        = "system:serviceaccount:crossplane-system:crossplane"
	mrFinalizer           = "finalizer.managedresource.crossplane.io"
	xrFinalizer           = "composite.apiextensions.crossplane.io"
	// claimguardTimeout bounds waits for Steward's caches and webhook rules
	// to follow a change: discovery, an informer sync, a server-side apply
	// and the API server's webhook informer.
	claimguardTimeout = 60 * time.Second
)

// claimguardRules returns the resources of claimguard's create entry, as
// "resource.group", from the live webhook configuration.
func claimguardRules(ctx context.Context) ([]string, error) { return claimguardRulesOn(ctx, env) }

// claimguardRulesOn is claimguardRules in the environment e.
func claimguardRulesOn(ctx context.Context, e *harness.Env) ([]string, error) {
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, vwc); err != nil {
		return nil, err
	}
	var out []string
	for _, wh := range vwc.Webhooks {
		if wh.Name != rule.WebhookName(claimguard.Name, "") {
			continue
		}
		for _, r := range wh.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					out = append(out, res+"."+g)
				}
			}
		}
	}
	return out, nil
}

// waitGuarded waits until claimguard's rules name every resource and a
// server-side dry run of probe (a create) is refused by claimguard, which
// proves the API server uses the rules and Steward's caches see the
// deletion that refuses it.
func waitGuarded(t *testing.T, ctx context.Context, probe string, resources ...string) {
	t.Helper()
	waitGuardedOn(t, ctx, env, probe, resources...)
}

// waitGuardedOn is waitGuarded in the environment e.
func waitGuardedOn(t *testing.T, ctx context.Context, e *harness.Env, probe string, resources ...string) {
	t.Helper()
	harness.Eventually(t, claimguardTimeout, func() error {
		got, err := claimguardRulesOn(ctx, e)
		if err != nil {
			return err
		}
		for _, r := range resources {
			if !slices.Contains(got, r) {
				return fmt.Errorf("claimguard's rules %v do not name %s yet", got, r)
			}
		}
		return nil
	})
	harness.Eventually(t, claimguardTimeout, func() error {
		_, stderr, err := e.Kubectl(ctx, probe, "create", "--dry-run=server", "-f", "-")
		if err == nil || !strings.Contains(stderr, "claimguard: ") {
			return fmt.Errorf("dry-run create is not refused by claimguard yet: %v %s", err, stderr)
		}
		return nil
	})
}

func kubectlOK(t *testing.T, ctx context.Context, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	return kubectlOKOn(t, ctx, env, stdin, args...)
}

// kubectlOKOn is kubectlOK in the environment e.
func kubectlOKOn(t *testing.T, ctx context.Context, e *harness.Env, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, err := e.Kubectl(ctx, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return stdout, stderr
}

// refusedBy runs kubectl, expects claimguard's refusal through hook, and
// checks that the message holds every part.
func refusedBy(t *testing.T, ctx context.Context, hook, stdin string, args []string, parts ...string) {
	t.Helper()
	refusedByOn(t, ctx, env, hook, stdin, args, parts...)
}

// refusedByOn is refusedBy in the environment e.
func refusedByOn(t *testing.T, ctx context.Context, e *harness.Env, hook, stdin string, args []string, parts ...string) {
	t.Helper()
	_, stderr, err := e.Kubectl(ctx, stdin, args...)
	if err == nil {
		t.Fatalf("kubectl %s succeeded; claimguard should have refused it", strings.Join(args, " "))
	}
	if !strings.Contains(stderr, hook+"claimguard: ") {
		t.Fatalf("kubectl %s was not refused by %s:\n%s", strings.Join(args, " "), hook, stderr)
	}
	for _, p := range parts {
		if !strings.Contains(stderr, p) {
			t.Errorf("the refusal does not say %q:\n%s", p, stderr)
		}
	}
}

// dropFinalizers removes every finalizer, as the provider and the garbage
// collector do when they are done.
func dropFinalizers(t *testing.T, ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) {
	t.Helper()
	dropFinalizersOn(t, ctx, env, gvk, namespace, name)
}

// dropFinalizersOn is dropFinalizers in the environment e.
func dropFinalizersOn(t *testing.T, ctx context.Context, e *harness.Env, gvk schema.GroupVersionKind, namespace, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	if err := e.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); client.IgnoreNotFound(err) != nil {
		t.Fatalf("removing the finalizers of %s %s: %v", gvk.Kind, name, err)
	}
	harness.Eventually(t, claimguardTimeout, func() error {
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s %s still exists (%v)", gvk.Kind, name, err)
	})
}

func createUnstructured(t *testing.T, ctx context.Context, yamlDoc string) *unstructured.Unstructured {
	t.Helper()
	return createUnstructuredOn(t, ctx, env, yamlDoc)
}

// createUnstructuredOn is createUnstructured in the environment e.
func createUnstructuredOn(t *testing.T, ctx context.Context, e *harness.Env, yamlDoc string) *unstructured.Unstructured {
	t.Helper()
	stdout, _ := kubectlOKOn(t, ctx, e, yamlDoc, "create", "-f", "-", "-o", "json")
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(stdout), &u.Object); err != nil {
		t.Fatalf("decoding the created object: %v", err)
	}
	return u
}

var (
	pgXRGVK  = schema.GroupVersionKind{Group: "database.example.org", Version: "v1alpha1", Kind: "XPostgreSQLInstance"}
	pgClaimY = `apiVersion: database.example.org/v1alpha1
kind: PostgreSQLInstance
metadata: {name: db, namespace: default}
spec: {parameters: {storageGB: 20}, compositeDeletePolicy: Foreground}
`
)

// composedDB is provider-sql's PostgreSQL Database as Crossplane composes
// it for XR owner: in the legacy cluster-scoped group, or in the namespaced
// .m. group when namespace is set.
func composedDB(name, ownerAPIVersion, ownerKind, owner string, ownerUID types.UID, extName, namespace string, claim bool) string {
	meta := fmt.Sprintf(`  name: %s
  labels: {crossplane.io/composite: %s%s}
  annotations: {crossplane.io/external-name: %s}
  finalizers: [%s]
  ownerReferences:
  - {apiVersion: %s, kind: %s, name: %s, uid: %s, controller: true, blockOwnerDeletion: true}
`, name, owner, map[bool]string{true: ", crossplane.io/claim-name: db, crossplane.io/claim-namespace: default"}[claim], extName, mrFinalizer, ownerAPIVersion, ownerKind, owner, ownerUID)
	if namespace == "" {
		return "apiVersion: postgresql.sql.crossplane.io/v1alpha1\nkind: Database\nmetadata:\n" + meta + "spec: {forProvider: {encoding: UTF8}}\n"
	}
	return "apiVersion: postgresql.sql.m.crossplane.io/v1alpha1\nkind: Database\nmetadata:\n  namespace: " + namespace + "\n" + meta + "spec: {forProvider: {encoding: UTF8}}\n"
}

// TestClaimguardClaimDuringForegroundDeletion is the proof for a
// claim: while the XR of claim default/db deletes in the foreground, a new
// claim default/db and an MR with the same external name are refused, with
// the reason; once the deletion finishes both are created.
func TestClaimguardClaimDuringForegroundDeletion(t *testing.T) {
	env.LogOnFailure(t)
	ctx := context.Background()
	harness.Eventually(t, claimguardTimeout, func() error {
		got, err := claimguardRules(ctx)
		if err != nil {
			return err
		}
		if !slices.Contains(got, "postgresqlinstances.database.example.org") || !slices.Contains(got, "xpostgresqlinstances.database.example.org") {
			return fmt.Errorf("claimguard's rules %v do not name the sample XRD's kinds yet", got)
		}
		return nil
	})

	// The claim exists, with compositeDeletePolicy Foreground; Crossplane
	// created its XR and composed an MR.
	kubectlOK(t, ctx, pgClaimY, "--as", "jane", "create", "-f", "-")
	xr := createUnstructured(t, ctx, `apiVersion: database.example.org/v1alpha1
kind: XPostgreSQLInstance
metadata:
  name: db-x7k2p
  labels: {crossplane.io/claim-name: db, crossplane.io/claim-namespace: default}
  finalizers: [`+xrFinalizer+`]
spec:
  claimRef: {apiVersion: database.example.org/v1alpha1, kind: PostgreSQLInstance, namespace: default, name: db}
  resourceRefs:
  - {apiVersion: postgresql.sql.crossplane.io/v1alpha1, kind: Database, name: db-x7k2p-abcde}
`)
	t.Cleanup(func() {
		dropFinalizers(t, ctx, legacyDBGVK, "", "db-x7k2p-abcde")
		dropFinalizers(t, ctx, pgXRGVK, "", "db-x7k2p")
	})
	kubectlOK(t, ctx, composedDB("db-x7k2p-abcde", "database.example.org/v1alpha1", "XPostgreSQLInstance", "db-x7k2p", xr.GetUID(), "e2e-db", "", true),
		"--as", crossplaneUser, "create", "-f", "-")

	// Deleting the claim warns what kubectl will wait for (Crossplane's
	// claim finalizer would hold it; none runs here, so it goes at once).
	_, stderr := kubectlOK(t, ctx, "", "--as", "jane", "delete", "postgresqlinstance", "db", "-n", "default", "--wait=false")
	for _, want := range []string{
		"Warning: claimguard: PostgreSQLInstance default/db is deleted with compositeDeletePolicy Foreground: it stays until these are gone: XPostgreSQLInstance db-x7k2p, held by 1 composed resource: ",
		`Database db-x7k2p-abcde (external name "e2e-db"; finalizers: finalizer.managedresource.crossplane.io). kubectl delete waits until then; ` +
			"follow progress with kubectl get managed -l crossplane.io/claim-namespace=default,crossplane.io/claim-name=db.",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl delete of the claim does not warn %q:\n%s", want, stderr)
		}
	}
	// Crossplane deletes the XR with Foreground propagation; kubectl says
	// why it waits.
	_, stderr = kubectlOK(t, ctx, "", "delete", "xpostgresqlinstance", "db-x7k2p", "--cascade=foreground", "--wait=false")
	for _, want := range []string{
		"Warning: claimguard: XPostgreSQLInstance db-x7k2p is deleted with Foreground propagation: it stays until its 1 composed resource is gone: ",
		`Database db-x7k2p-abcde (external name "e2e-db"; finalizers: finalizer.managedresource.crossplane.io)`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl delete does not warn %q:\n%s", want, stderr)
		}
	}
	// The garbage collector deletes the dependent; the provider's finalizer
	// keeps it while it deletes the external database.
	kubectlOK(t, ctx, "", "delete", "databases.postgresql.sql.crossplane.io", "db-x7k2p-abcde", "--wait=false")

	waitGuarded(t, ctx, pgClaimY)
	refusedBy(t, ctx, claimguardHook, pgClaimY, []string{"--as", "jane", "apply", "-f", "-"},
		"claimguard: PostgreSQLInstance default/db cannot be created yet: XPostgreSQLInstance db-x7k2p, the composite resource of the previous claim default/db, has been deleting for ",
		` and is still held by 1 composed resource: Database db-x7k2p-abcde (external name "e2e-db"; deleting for `,
		"; finalizers: finalizer.managedresource.crossplane.io). A new claim would compose new resources with the same external names while the old ones are still deleting theirs.",
		"Retry once XPostgreSQLInstance db-x7k2p is gone (kubectl get xpostgresqlinstances.database.example.org db-x7k2p).")

	// The claim controller's own retry, a new XR for default/db, is refused
	// the same way, so the claim's events would carry the reason.
	newXR := `apiVersion: database.example.org/v1alpha1
kind: XPostgreSQLInstance
metadata:
  name: db-n3w11
  labels: {crossplane.io/claim-name: db, crossplane.io/claim-namespace: default}
spec: {claimRef: {apiVersion: database.example.org/v1alpha1, kind: PostgreSQLInstance, namespace: default, name: db}}
`
	refusedBy(t, ctx, claimguardHook, newXR, []string{"--as", crossplaneUser, "create", "-f", "-"},
		"claimguard: XPostgreSQLInstance db-n3w11 for claim default/db cannot be created yet: XPostgreSQLInstance db-x7k2p of the same claim has been deleting for ")

	// An MR with the same external name, composed for another XR.
	newMR := composedDB("db-n3w11-xyz", "database.example.org/v1alpha1", "XPostgreSQLInstance", "db-n3w11", "0b1c2d3e-0000-4000-8000-000000000001", "e2e-db", "", true)
	refusedBy(t, ctx, claimguardManagedHook, newMR, []string{"--as", crossplaneUser, "create", "-f", "-"},
		`claimguard: Database db-n3w11-xyz with external name "e2e-db" cannot be created yet: Database db-x7k2p-abcde (deleting for `,
		"; finalizers: finalizer.managedresource.crossplane.io; composed by XPostgreSQLInstance db-x7k2p for claim default/db) has the same external name and still manages that external resource",
		"Retry once Database db-x7k2p-abcde is gone (kubectl get databases.postgresql.sql.crossplane.io db-x7k2p-abcde).")

	denied, err := env.Steward.Counter("steward_decisions_total", map[string]string{"rule": "claimguard", "decision": "denied"})
	if err != nil || denied < 3 {
		t.Errorf("steward_decisions_total{rule=claimguard,decision=denied} = %v (%v), want at least 3", denied, err)
	}

	// The provider finishes, then the garbage collector: both creates pass.
	dropFinalizers(t, ctx, legacyDBGVK, "", "db-x7k2p-abcde")
	dropFinalizers(t, ctx, pgXRGVK, "", "db-x7k2p")
	harness.Eventually(t, claimguardTimeout, func() error {
		_, _, err := env.Kubectl(ctx, pgClaimY, "--as", "jane", "apply", "-f", "-")
		return err
	})
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(ctx, "", "delete", "postgresqlinstance", "db", "-n", "default", "--wait=false")
	})
	harness.Eventually(t, claimguardTimeout, func() error {
		_, _, err := env.Kubectl(ctx, newMR, "--as", crossplaneUser, "create", "-f", "-")
		return err
	})
	t.Cleanup(func() { dropFinalizers(t, ctx, legacyDBGVK, "", "db-n3w11-xyz") })
	kubectlOK(t, ctx, "", "delete", "databases.postgresql.sql.crossplane.io", "db-n3w11-xyz", "--wait=false")
}

// The v2 fixtures: a namespaced XR kind from a v2 XRD, which the test
// installs itself, composing provider-sql's namespaced Databases (its ".m."
// group, installed with the environment).
var (
	appGVK = schema.GroupVersionKind{Group: "platform.example.org", Version: "v1", Kind: "XApp"}
	appY   = `apiVersion: platform.example.org/v1
kind: XApp
metadata: {name: db, namespace: default}
spec: {parameters: {size: small}}
`
)

func permissiveCRD(group, kind, plural string, scope apiextensionsv1.ResourceScope, version string, categories ...string) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind), Categories: categories},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: version, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
}

// installCRDs creates CRDs, waits until they are established, and removes
// them when the test ends.
func installCRDs(t *testing.T, ctx context.Context, crds ...*apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	for _, crd := range crds {
		if err := env.Client.Create(ctx, crd); err != nil {
			t.Fatalf("creating CRD %s: %v", crd.Name, err)
		}
		name := crd.Name
		t.Cleanup(func() {
			_ = env.Client.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}})
		})
	}
	for _, crd := range crds {
		harness.Eventually(t, claimguardTimeout, func() error {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
				return err
			}
			if !crdCondition(got, apiextensionsv1.Established) {
				return fmt.Errorf("CRD %s is not established", crd.Name)
			}
			return nil
		})
	}
}

func installXRD(t *testing.T, ctx context.Context, doc string) {
	t.Helper()
	u := createUnstructured(t, ctx, doc)
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(ctx, "", "delete", "compositeresourcedefinition", u.GetName(), "--wait=false")
	})
}

// TestClaimguardV2NamespacedComposite is the same proof for a v2 XR (no
// claim): a GitOps tool re-creating XApp default/db is refused while the
// old one deletes in the foreground, and again while it is gone but its
// composed MR still deletes (what a Background delete leaves behind); an
// MR with the same external name is refused; then everything passes. The
// XRD and its kind are new to the running Steward.
func TestClaimguardV2NamespacedComposite(t *testing.T) {
	env.LogOnFailure(t)
	ctx := context.Background()
	pid := env.Steward.PID()
	installCRDs(t, ctx,
		permissiveCRD("platform.example.org", "XApp", "xapps", apiextensionsv1.NamespaceScoped, "v1", "composite"))
	installXRD(t, ctx, `apiVersion: apiextensions.crossplane.io/v2
kind: CompositeResourceDefinition
metadata: {name: xapps.platform.example.org}
spec:
  scope: Namespaced
  group: platform.example.org
  names: {kind: XApp, plural: xapps}
  versions:
  - name: v1
    served: true
    referenceable: true
    schema: {openAPIV3Schema: {type: object}}
`)
	harness.Eventually(t, claimguardTimeout, func() error {
		got, err := claimguardRules(ctx)
		if err != nil {
			return err
		}
		if !slices.Contains(got, "xapps.platform.example.org") {
			return fmt.Errorf("claimguard's rules %v do not name xapps.platform.example.org yet", got)
		}
		return nil
	})

	xr := createUnstructured(t, ctx, `apiVersion: platform.example.org/v1
kind: XApp
metadata: {name: db, namespace: default, finalizers: [`+xrFinalizer+`]}
spec:
  parameters: {size: small}
  crossplane:
    resourceRefs:
    - {apiVersion: postgresql.sql.m.crossplane.io/v1alpha1, kind: Database, name: db-q8w2z}
`)
	t.Cleanup(func() {
		dropFinalizers(t, ctx, nsDBGVK, "default", "db-q8w2z")
		dropFinalizers(t, ctx, appGVK, "default", "db")
	})
	kubectlOK(t, ctx, composedDB("db-q8w2z", "platform.example.org/v1", "XApp", "db", xr.GetUID(), "e2e-app-db", "default", false),
		"--as", crossplaneUser, "create", "-f", "-")

	_, stderr := kubectlOK(t, ctx, "", "delete", "xapp", "db", "-n", "default", "--cascade=foreground", "--wait=false")
	if want := `Warning: claimguard: XApp default/db is deleted with Foreground propagation: it stays until its 1 composed resource is gone: Database default/db-q8w2z (external name "e2e-app-db"; finalizers: finalizer.managedresource.crossplane.io)`; !strings.Contains(stderr, want) {
		t.Errorf("kubectl delete does not warn %q:\n%s", want, stderr)
	}
	kubectlOK(t, ctx, "", "delete", "databases.postgresql.sql.m.crossplane.io", "db-q8w2z", "-n", "default", "--wait=false")

	// Re-created while the old XApp still deletes: claimguard explains what
	// it waits for (the API server alone would only say AlreadyExists).
	waitGuarded(t, ctx, appY)
	refusedBy(t, ctx, claimguardHook, appY, []string{"--as", "jane", "create", "-f", "-"},
		"claimguard: XApp default/db cannot be created yet: the previous XApp default/db has been deleting for ",
		` and is still held by 1 composed resource: Database default/db-q8w2z (external name "e2e-app-db"; deleting for `,
		"Retry once it is gone (kubectl get xapps.platform.example.org -n default db).")

	// The XR goes away (as after a Background delete) while its MR still
	// deletes the external database: a new XApp db would collide with it.
	dropFinalizers(t, ctx, appGVK, "default", "db")
	harness.Eventually(t, claimguardTimeout, func() error {
		_, stderr, err := env.Kubectl(ctx, appY, "apply", "--dry-run=server", "-f", "-")
		if err == nil || !strings.Contains(stderr, "composed by the previous XApp default/db") {
			return fmt.Errorf("dry-run apply is not refused for the leftover MR yet: %v %s", err, stderr)
		}
		return nil
	})
	refusedBy(t, ctx, claimguardHook, appY, []string{"--as", "jane", "apply", "-f", "-"},
		"claimguard: XApp default/db cannot be created yet: 1 resource composed by the previous XApp default/db is still being deleted or awaiting garbage collection: ",
		`Database default/db-q8w2z (external name "e2e-app-db"; deleting for `,
		"A new XApp would compose new resources with the same external names while the old ones are still deleting theirs.")

	newMR := composedDB("db-n3w11", "platform.example.org/v1", "XApp", "db-2", "0b1c2d3e-0000-4000-8000-000000000002", "e2e-app-db", "default", false)
	refusedBy(t, ctx, claimguardManagedHook, newMR, []string{"--as", crossplaneUser, "create", "-f", "-"},
		`claimguard: Database default/db-n3w11 with external name "e2e-app-db" cannot be created yet: Database default/db-q8w2z (deleting for `,
		"; composed by XApp db) has the same external name")

	dropFinalizers(t, ctx, nsDBGVK, "default", "db-q8w2z")
	harness.Eventually(t, claimguardTimeout, func() error {
		_, _, err := env.Kubectl(ctx, appY, "--as", "jane", "apply", "-f", "-")
		return err
	})
	t.Cleanup(func() { _, _, _ = env.Kubectl(ctx, "", "delete", "xapp", "db", "-n", "default", "--wait=false") })
	harness.Eventually(t, claimguardTimeout, func() error {
		_, _, err := env.Kubectl(ctx, newMR, "--as", crossplaneUser, "create", "-f", "-")
		return err
	})
	t.Cleanup(func() { dropFinalizers(t, ctx, nsDBGVK, "default", "db-n3w11") })
	kubectlOK(t, ctx, "", "delete", "databases.postgresql.sql.m.crossplane.io", "db-n3w11", "-n", "default", "--wait=false")

	if env.Steward.PID() != pid {
		t.Errorf("Steward was restarted (pid %d -> %d); new kinds must be picked up while it runs", pid, env.Steward.PID())
	}
}

// TestClaimguardNewXRDIsGuardedWithoutRestart adds an XRD with a claim to
// the running Steward (before its CRDs exist, as Crossplane does) and
// proves its claim kind is guarded, then that removing it removes the kinds
// from the webhook rules again.
func TestClaimguardNewXRDIsGuardedWithoutRestart(t *testing.T) {
	env.LogOnFailure(t)
	ctx := context.Background()
	pid := env.Steward.PID()
	if got, err := claimguardRules(ctx); err != nil || slices.Contains(got, "buckets.storage.example.org") {
		t.Fatalf("claimguard already guards buckets (%v, %v)", got, err)
	}
	installXRD(t, ctx, `apiVersion: apiextensions.crossplane.io/v1
kind: CompositeResourceDefinition
metadata: {name: xbuckets.storage.example.org}
spec:
  group: storage.example.org
  names: {kind: XBucket, plural: xbuckets}
  claimNames: {kind: Bucket, plural: buckets}
  defaultCompositeDeletePolicy: Foreground
  versions:
  - name: v1
    served: true
    referenceable: true
    schema: {openAPIV3Schema: {type: object}}
`)
	crds := []*apiextensionsv1.CustomResourceDefinition{
		permissiveCRD("storage.example.org", "XBucket", "xbuckets", apiextensionsv1.ClusterScoped, "v1", "composite"),
		permissiveCRD("storage.example.org", "Bucket", "buckets", apiextensionsv1.NamespaceScoped, "v1", "claim"),
	}
	installCRDs(t, ctx, crds...)

	xr := createUnstructured(t, ctx, `apiVersion: storage.example.org/v1
kind: XBucket
metadata:
  name: logs-5kq2m
  labels: {crossplane.io/claim-name: logs, crossplane.io/claim-namespace: default}
  finalizers: [`+xrFinalizer+`]
spec: {claimRef: {apiVersion: storage.example.org/v1, kind: Bucket, namespace: default, name: logs}}
`)
	xbucketGVK := schema.GroupVersionKind{Group: "storage.example.org", Version: "v1", Kind: "XBucket"}
	t.Cleanup(func() { dropFinalizers(t, ctx, xbucketGVK, "", xr.GetName()) })
	kubectlOK(t, ctx, "", "delete", "xbucket", "logs-5kq2m", "--cascade=foreground", "--wait=false")

	claim := `apiVersion: storage.example.org/v1
kind: Bucket
metadata: {name: logs, namespace: default}
spec: {}
`
	waitGuarded(t, ctx, claim, "buckets.storage.example.org", "xbuckets.storage.example.org")
	refusedBy(t, ctx, claimguardHook, claim, []string{"--as", "jane", "apply", "-f", "-"},
		"claimguard: Bucket default/logs cannot be created yet: XBucket logs-5kq2m, the composite resource of the previous claim default/logs, has been deleting for ",
		"is held by its finalizers")
	if env.Steward.PID() != pid {
		t.Errorf("Steward was restarted (pid %d -> %d)", pid, env.Steward.PID())
	}

	// Removing the XRD and its CRDs removes the kinds from the rules.
	dropFinalizers(t, ctx, xbucketGVK, "", xr.GetName())
	kubectlOK(t, ctx, "", "delete", "compositeresourcedefinition", "xbuckets.storage.example.org")
	for _, crd := range crds {
		_ = env.Client.Delete(ctx, crd)
	}
	harness.Eventually(t, claimguardTimeout, func() error {
		got, err := claimguardRules(ctx)
		if err != nil {
			return err
		}
		if slices.Contains(got, "buckets.storage.example.org") || slices.Contains(got, "xbuckets.storage.example.org") {
			return fmt.Errorf("claimguard's rules %v still name the removed XRD's kinds", got)
		}
		return nil
	})
}

// TestClaimguardOwnsOnlyItsRules proves the webhook configuration is shared
// safely: claimguard's field manager owns the rules of its two entries and
// nothing else, so the installer's fields and the caBundle cert-manager's
// cainjector writes are never claimed or overwritten by it.
func TestClaimguardOwnsOnlyItsRules(t *testing.T) {
	ctx := context.Background()
	harness.Eventually(t, claimguardTimeout, func() error {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, vwc); err != nil {
			return err
		}
		for _, m := range vwc.ManagedFields {
			if m.Manager != rule.FieldManager(claimguard.Name) {
				continue
			}
			var fields map[string]any
			if err := json.Unmarshal(m.FieldsV1.GetRawBytes(), &fields); err != nil {
				return err
			}
			want := map[string]any{"f:webhooks": map[string]any{
				`k:{"name":"` + rule.WebhookName(claimguard.Name, "") + `"}`:       map[string]any{".": map[string]any{}, "f:name": map[string]any{}, "f:rules": map[string]any{}},
				`k:{"name":"` + rule.WebhookName(claimguard.Name, "delete") + `"}`: map[string]any{".": map[string]any{}, "f:name": map[string]any{}, "f:rules": map[string]any{}},
			}}
			got, _ := json.Marshal(fields)
			wantJSON, _ := json.Marshal(want)
			if string(got) != string(wantJSON) {
				return fmt.Errorf("%s owns %s, want %s", rule.FieldManager(claimguard.Name), got, wantJSON)
			}
			return nil
		}
		return fmt.Errorf("no field manager %s on the webhook configuration", rule.FieldManager(claimguard.Name))
	})
}

// TestClaimguardCacheGaugeFollowsCreates proves that
// steward_claimguard_cached_objects counts an MR as soon as claimguard's
// cache holds it, not at the next snapshot of its kinds (every five
// minutes without CRD changes).
func TestClaimguardCacheGaugeFollowsCreates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	managed := map[string]string{"role": "managed"}
	before, err := env.Steward.Counter("steward_claimguard_cached_objects", managed)
	if err != nil {
		t.Fatal(err)
	}
	kubectlOK(t, ctx, "apiVersion: postgresql.sql.crossplane.io/v1alpha1\nkind: Database\nmetadata: {name: gauge-probe}\nspec: {forProvider: {}}\n", "create", "-f", "-")
	t.Cleanup(func() {
		kubectlOK(t, context.Background(), "", "delete", "databases.postgresql.sql.crossplane.io", "gauge-probe", "--wait=false")
	})
	harness.Eventually(t, 10*time.Second, func() error {
		got, err := env.Steward.Counter("steward_claimguard_cached_objects", managed)
		if err != nil {
			return err
		}
		if got != before+1 {
			return fmt.Errorf("steward_claimguard_cached_objects{role=managed} = %v after creating an MR, want %v", got, before+1)
		}
		return nil
	})
}
