//go:build extended

// The scenario needs OLM's catalog operator and opm, whose build make test
// leaves out to keep a fresh machine's CI run short: it runs under the build
// tag extended, through make e2e-extended.

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

const (
	realOLMNS       = "realolm"
	realOLMPackage  = "held"
	realOLMCSV      = "held.v0.1.0"
	realOLMCatalog  = "steward-e2e"
	realOLMHeld     = "held-settings"
	realOLMHold     = "realolm-hold"
	realOLMHoldText = "held until the test lets the install finish"
	// realOLMTimeout bounds each wait on the catalog operator: resolving
	// a Subscription and executing a plan take seconds.
	realOLMTimeout = 90 * time.Second
)

// realOLMCatalogFiles is a file-based catalog of one package, one channel
// and one bundle, the way opm serves a catalog image's: the bundle has no
// image (so no unpack Job, which needs a kubelet) and carries its
// manifests as olm.bundle.object properties: a ClusterServiceVersion with
// no deployment, and the ConfigMap realOLMHeld.
func realOLMCatalogFiles(t *testing.T) map[string]string {
	t.Helper()
	object := func(obj map[string]any) map[string]any {
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]any{"type": "olm.bundle.object", "value": map[string]any{"data": base64.StdEncoding.EncodeToString(data)}}
	}
	csv := map[string]any{
		"apiVersion": olmAPIVersion, "kind": "ClusterServiceVersion",
		"metadata": map[string]any{"name": realOLMCSV},
		"spec": map[string]any{
			"displayName": "Held", "version": "0.1.0",
			"install": map[string]any{"strategy": "deployment", "spec": map[string]any{"deployments": []any{}}},
			"installModes": []any{
				map[string]any{"type": "OwnNamespace", "supported": true},
				map[string]any{"type": "SingleNamespace", "supported": true},
				map[string]any{"type": "MultiNamespace", "supported": false},
				map[string]any{"type": "AllNamespaces", "supported": true},
			},
		},
	}
	settings := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": realOLMHeld},
		"data":     map[string]any{"color": "blue"},
	}
	var b strings.Builder
	for _, doc := range []map[string]any{
		{"schema": "olm.package", "name": realOLMPackage, "defaultChannel": "stable"},
		{"schema": "olm.channel", "package": realOLMPackage, "name": "stable", "entries": []any{map[string]any{"name": realOLMCSV}}},
		{"schema": "olm.bundle", "package": realOLMPackage, "name": realOLMCSV, "image": "", "properties": []any{
			map[string]any{"type": "olm.package", "value": map[string]any{"packageName": realOLMPackage, "version": "0.1.0"}},
			object(csv), object(settings),
		}},
	} {
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return map[string]string{realOLMPackage + "/catalog.json": b.String()}
}

// TestRealOLM runs installplanguard's scenario against OLM's real catalog
// operator, in an environment of its own (OLM's release CRDs replace the
// ones the package's other tests use), with Steward's rendered webhooks
// registered: a Manual Subscription against a catalog opm serves on
// 127.0.0.1; the catalog operator resolves it into an InstallPlan that
// RequiresApproval; a person approves it; the plan is held Installing
// (a ValidatingAdmissionPolicy refuses the bundle's ConfigMap, which the
// catalog operator retries, until the test removes its binding), and
// meanwhile deleting or un-approving it is refused with installplanguard's
// messages; once the catalog operator has completed it, a person's delete
// is allowed. The Subscription is never InstallPlanMissing while Steward
// refuses, and none of OLM's writes is refused by Steward.
func TestRealOLM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	started := time.Now()
	e, err := harness.StartWith(ctx, harness.Options{})
	if err != nil {
		t.Fatalf("starting an API server: %v", err)
	}
	t.Cleanup(e.Stop)
	if _, err := e.StartSteward(ctx, harness.DefaultConfig); err != nil {
		t.Fatalf("starting steward: %v", err)
	}
	e.LogOnFailure(t)
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: realOLMNS}}); err != nil {
		t.Fatal(err)
	}
	holdRealOLMConfigMap(ctx, t, e)
	if _, err := e.StartOLM(ctx, t, realOLMCatalog, realOLMCatalogFiles(t)); err != nil {
		t.Fatalf("starting OLM's catalog operator: %v", err)
	}
	t.Logf("the API server, Steward, opm and OLM's catalog operator %s started in %s", harness.OLMRelease, time.Since(started).Round(time.Millisecond))

	// One OperatorGroup selects the namespace (OLM resolves nothing in a
	// namespace without one), and a Manual Subscription of the package.
	group := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
		"metadata": map[string]any{"name": realOLMNS, "namespace": realOLMNS},
		"spec":     map[string]any{"targetNamespaces": []any{realOLMNS}},
	}}
	sub := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": olmAPIVersion, "kind": "Subscription",
		"metadata": map[string]any{"name": realOLMPackage, "namespace": realOLMNS},
		"spec": map[string]any{"channel": "stable", "name": realOLMPackage, "source": realOLMCatalog, "sourceNamespace": harness.OLMNamespace,
			"installPlanApproval": "Manual", "startingCSV": realOLMCSV},
	}}
	if err := e.Client.Create(ctx, group); err != nil {
		t.Fatalf("creating OperatorGroup %s: %v", group.GetName(), err)
	}
	// OLM's olm operator, which does not run here (it hard-codes the
	// catalog operator's metrics port), writes the namespaces an
	// OperatorGroup selects into its status; the catalog operator executes
	// a plan only in a namespace an OperatorGroup's status names. The test
	// writes it as OLM's service account, as the olm operator would.
	olmClient, err := e.As(harness.OLMUser())
	if err != nil {
		t.Fatal(err)
	}
	groupStatus := fmt.Sprintf(`{"status":{"namespaces":[%q],"lastUpdated":%q}}`, realOLMNS, time.Now().UTC().Format(time.RFC3339))
	if err := olmClient.Status().Patch(ctx, group, client.RawPatch(types.MergePatchType, []byte(groupStatus))); err != nil {
		t.Fatalf("writing the OperatorGroup's status as OLM: %v", err)
	}
	if err := e.Client.Create(ctx, sub); err != nil {
		t.Fatalf("creating Subscription %s: %v", sub.GetName(), err)
	}

	// The catalog operator resolves the Subscription into a plan owned by
	// it, and points the Subscription at it.
	var plan string
	harness.Eventually(t, realOLMTimeout, func() error {
		s := realOLMGet(ctx, t, e, "Subscription", realOLMPackage)
		plan, _, _ = unstructured.NestedString(s.Object, "status", "installPlanRef", "name")
		if plan == "" {
			return fmt.Errorf("the Subscription has no status.installPlanRef yet: %s", realOLMSubscriptionState(s))
		}
		return realOLMWantPhase(ctx, t, e, plan, "RequiresApproval")
	})
	ip := realOLMGet(ctx, t, e, "InstallPlan", plan)
	owners, _ := json.Marshal(ip.GetOwnerReferences())
	spec, _ := json.Marshal(ip.Object["spec"])
	t.Logf("the catalog operator created InstallPlan %s: spec %s, ownerReferences %s", plan, spec, owners)
	realOLMNotMissing(ctx, t, e, "while the plan RequiresApproval")

	t.Run("APersonApprovesThePlan", func(t *testing.T) {
		if _, _, err := e.Kubectl(ctx, "", "--as", "jane", "-n", realOLMNS, "patch", "installplan", plan, "--type=merge", "-p", `{"spec":{"approved":true}}`); err != nil {
			t.Fatalf("approving the plan: %v", err)
		}
		// The catalog operator moves it to Installing and tries the
		// bundle's objects; the ConfigMap is refused, so it stays there,
		// retrying.
		harness.Eventually(t, realOLMTimeout, func() error {
			if err := realOLMWantPhase(ctx, t, e, plan, "Installing"); err != nil {
				return err
			}
			msg, _, _ := unstructured.NestedString(realOLMGet(ctx, t, e, "InstallPlan", plan).Object, "status", "message")
			if !strings.Contains(msg, realOLMHoldText) {
				return fmt.Errorf("the plan's status.message is %q: the catalog operator has not yet tried the held ConfigMap", msg)
			}
			return nil
		})
		realOLMNotMissing(ctx, t, e, "while the plan is Installing")
	})

	t.Run("DeletingTheInstallingPlanIsRefused", func(t *testing.T) {
		want := fmt.Sprintf("installplanguard: InstallPlan %[1]s/%[2]s is Installing and owned by Subscription %[1]s/%[3]s; deleting it while OLM is still working on it leaves the Subscription InstallPlanMissing or stuck. Refused: delete. Instead, wait until it is Complete or Failed, or delete Subscription %[1]s/%[3]s to cancel the install (the garbage collector then removes the plan).",
			realOLMNS, plan, realOLMPackage)
		// Steward's cache sees Installing a moment after the catalog
		// operator wrote it; the stored phase the API server's
		// matchConditions read is already Installing.
		harness.Eventually(t, 20*time.Second, func() error {
			_, _, err := e.Kubectl(ctx, "", "--as", "jane", "-n", realOLMNS, "delete", "installplan", plan, "--dry-run=server")
			if err == nil || !strings.Contains(err.Error(), ipgHook+want) {
				return fmt.Errorf("kubectl delete --dry-run=server: %v\nwant the denial:\n%s", err, want)
			}
			return nil
		})
		_, _, err := e.Kubectl(ctx, "", "--as", "jane", "-n", realOLMNS, "delete", "installplan", plan)
		if err == nil || !strings.Contains(err.Error(), ipgHook+want) {
			t.Fatalf("kubectl delete: %v\nwant the denial:\n%s", err, want)
		}
		realOLMNotMissing(ctx, t, e, "after the refused delete")
	})

	t.Run("UnapprovingTheInstallingPlanIsRefused", func(t *testing.T) {
		want := fmt.Sprintf("installplanguard: InstallPlan %[1]s/%[2]s is Installing and owned by Subscription %[1]s/%[3]s; changing what it installs or withdrawing its approval mid-install leaves the Subscription stuck. Refused: spec.approved from true to false. Instead, let the install finish (Complete or Failed); to hold back future upgrades set spec.installPlanApproval: Manual on the Subscription, or delete Subscription %[1]s/%[3]s to cancel the install.",
			realOLMNS, plan, realOLMPackage)
		_, _, err := e.Kubectl(ctx, "", "--as", "jane", "-n", realOLMNS, "patch", "installplan", plan, "--type=merge", "-p", `{"spec":{"approved":false}}`)
		if err == nil || !strings.Contains(err.Error(), ipgHook+want) {
			t.Fatalf("kubectl patch: %v\nwant the denial:\n%s", err, want)
		}
		if err := realOLMWantPhase(ctx, t, e, plan, "Installing"); err != nil {
			t.Fatal(err)
		}
		realOLMNotMissing(ctx, t, e, "after the refused un-approval")
	})

	t.Run("TheCatalogOperatorCompletesThePlan", func(t *testing.T) {
		if err := e.Client.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: realOLMHold}}); err != nil {
			t.Fatalf("releasing the held ConfigMap: %v", err)
		}
		harness.Eventually(t, realOLMTimeout, func() error { return realOLMWantPhase(ctx, t, e, plan, "Complete") })
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: realOLMNS, Name: realOLMHeld}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("the plan is Complete, but its ConfigMap: %v", err)
		}
		harness.Eventually(t, realOLMTimeout, func() error {
			s := realOLMGet(ctx, t, e, "Subscription", realOLMPackage)
			if state, _, _ := unstructured.NestedString(s.Object, "status", "state"); state != "AtLatestKnown" {
				return fmt.Errorf("the Subscription is not AtLatestKnown: %s", realOLMSubscriptionState(s))
			}
			return nil
		})
		realOLMNotMissing(ctx, t, e, "once the plan is Complete")
	})

	t.Run("NoWriteOfOLMIsRefusedBySteward", func(t *testing.T) {
		events, err := e.AuditEvents(func(ev harness.AuditEvent) bool {
			return ev.User.Username == harness.OLMUser() && ev.ObjectRef != nil && ev.Verb != "get" && ev.Verb != "list" && ev.Verb != "watch"
		})
		if err != nil {
			t.Fatal(err)
		}
		done, refused, held, others := map[string]bool{}, 0, 0, map[string]int{}
		for _, ev := range events {
			what := fmt.Sprintf("%s %s/%s %s", ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Subresource, ev.ObjectRef.Name)
			if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 {
				switch {
				case strings.Contains(ev.ResponseStatus.Message, "admission webhook"):
					refused++
					t.Errorf("Steward refused %s: %s", what, ev.ResponseStatus.Message)
				case strings.Contains(ev.ResponseStatus.Message, realOLMHoldText):
					held++
				default:
					// A conflict or an AlreadyExists refuses nothing: the
					// operator acted on an object another write had moved
					// on, and acts again.
					others[fmt.Sprintf("%s answered %d", what, ev.ResponseStatus.Code)]++
				}
				continue
			}
			done[what] = true
		}
		if held == 0 {
			t.Errorf("the audit log has no create of the held ConfigMap refused by the test's policy: the plan was never held Installing")
		}
		for _, w := range []string{"update installplans/status " + plan, "create configmaps/ " + realOLMHeld, "create clusterserviceversions/ " + realOLMCSV, "update subscriptions/status " + realOLMPackage} {
			if !done[w] {
				t.Errorf("the audit log has no successful %q of OLM's; its writes: %v", w, done)
			}
		}
		t.Logf("OLM's successful writes: %v; answered with an error that refuses nothing (count each): %v", done, others)
		t.Logf("OLM's catalog operator wrote %d times (%d distinct writes; %d creates of the held ConfigMap refused by the test's policy); Steward refused %d", len(events), len(done), held, refused)
	})

	t.Run("APersonDeletesTheCompletePlan", func(t *testing.T) {
		if _, _, err := e.Kubectl(ctx, "", "--as", "jane", "-n", realOLMNS, "delete", "installplan", plan); err != nil {
			t.Fatalf("deleting the Complete plan: %v", err)
		}
		// What the catalog operator then does with the Subscription,
		// which still names the plan in status.installPlanRef: it marks
		// it InstallPlanMissing (ReferencedInstallPlanNotFound), because
		// of a delete Steward allowed, not of one it refused. The
		// operator stays installed.
		harness.Eventually(t, realOLMTimeout, func() error {
			s := realOLMGet(ctx, t, e, "Subscription", realOLMPackage)
			conditions, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
			for _, c := range conditions {
				if m, _ := c.(map[string]any); m["type"] == "InstallPlanMissing" && m["status"] == "True" && m["reason"] == "ReferencedInstallPlanNotFound" {
					t.Logf("after the Complete plan's delete: Subscription %s", realOLMSubscriptionState(s))
					return nil
				}
			}
			return fmt.Errorf("the Subscription is not (yet) InstallPlanMissing after its Complete plan's delete: %s", realOLMSubscriptionState(s))
		})
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: realOLMNS, Name: realOLMCSV}, realOLMCSVObject()); err != nil {
			t.Errorf("the installed CSV after the plan's delete: %v", err)
		}
	})
}

// holdRealOLMConfigMap refuses the create of the bundle's ConfigMap in
// realOLMNS with a ValidatingAdmissionPolicy until its binding is
// deleted: the catalog operator retries a plan whose step is Forbidden for
// as long as it is, so the plan stays Installing, deterministically.
func holdRealOLMConfigMap(ctx context.Context, t *testing.T, e *harness.Env) {
	t.Helper()
	forbidden := metav1.StatusReasonForbidden
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: realOLMHold},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("object.metadata.name != %q", realOLMHeld),
				Message:    realOLMHoldText,
				Reason:     &forbidden,
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: realOLMHold},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        realOLMHold,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: realOLMNS},
			}},
		},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating the policy that holds the bundle's ConfigMap: %v", err)
		}
	}
	// The policy applies once the API server has loaded it: a ConfigMap
	// of the held name is refused.
	harness.Eventually(t, 30*time.Second, func() error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: realOLMHeld, Namespace: realOLMNS}}
		err := e.Client.Create(ctx, cm, client.DryRunAll)
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), realOLMHoldText) {
			return nil
		}
		return fmt.Errorf("a dry-run create of ConfigMap %s is not refused by the policy yet: %v", realOLMHeld, err)
	})
}

// realOLMCSVObject is an empty ClusterServiceVersion to read into.
func realOLMCSVObject() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(olmAPIVersion)
	obj.SetKind("ClusterServiceVersion")
	return obj
}

// realOLMGet returns the OLM object kind name in realOLMNS.
func realOLMGet(ctx context.Context, t *testing.T, e *harness.Env, kind, name string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(olmAPIVersion)
	obj.SetKind(kind)
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: realOLMNS, Name: name}, obj); err != nil {
		t.Fatalf("getting %s %s: %v", kind, name, err)
	}
	return obj
}

// realOLMWantPhase fails unless InstallPlan name's status.phase is want.
func realOLMWantPhase(ctx context.Context, t *testing.T, e *harness.Env, name, want string) error {
	t.Helper()
	ip := realOLMGet(ctx, t, e, "InstallPlan", name)
	if phase, _, _ := unstructured.NestedString(ip.Object, "status", "phase"); phase != want {
		msg, _, _ := unstructured.NestedString(ip.Object, "status", "message")
		return fmt.Errorf("InstallPlan %s is %q (message %q), want %s", name, phase, msg, want)
	}
	return nil
}

// realOLMSubscriptionState describes the Subscription's state, plan and
// conditions.
func realOLMSubscriptionState(s *unstructured.Unstructured) string {
	state, _, _ := unstructured.NestedString(s.Object, "status", "state")
	ref, _, _ := unstructured.NestedString(s.Object, "status", "installPlanRef", "name")
	conditions, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
	var conds []string
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		conds = append(conds, fmt.Sprintf("%v=%v (%v: %v)", m["type"], m["status"], m["reason"], m["message"]))
	}
	return fmt.Sprintf("state %q, installPlanRef %q, conditions [%s]", state, ref, strings.Join(conds, "; "))
}

// realOLMNotMissing fails the test if the Subscription has the condition
// InstallPlanMissing True.
func realOLMNotMissing(ctx context.Context, t *testing.T, e *harness.Env, when string) {
	t.Helper()
	s := realOLMGet(ctx, t, e, "Subscription", realOLMPackage)
	conditions, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
	for _, c := range conditions {
		if m, _ := c.(map[string]any); m["type"] == "InstallPlanMissing" && m["status"] == "True" {
			t.Errorf("%s, the Subscription is InstallPlanMissing: %s", when, realOLMSubscriptionState(s))
		}
	}
	t.Logf("%s: Subscription %s", when, realOLMSubscriptionState(s))
}
