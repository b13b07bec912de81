//go:build extended

// The scenario needs Fleet's controller and agent, whose build make test
// leaves out to keep a fresh machine's CI run short: it runs under the build
// tag extended, through make e2e-extended.

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

const (
	// realFleetNS is where the Bundle's objects are deployed (its
	// defaultNamespace), realFleetBundle the Bundle's name.
	realFleetNS     = "fleet-real"
	realFleetBundle = "web-app"
	// realFleetTimeout bounds the wait for the controller and the agent:
	// a BundleDeployment, a Helm install or upgrade, a drift correction.
	realFleetTimeout = 2 * time.Minute
)

// realFleetResources are the Bundle's inline resources, as a GitRepo's
// Job would have put them there from Git: a ConfigMap, a Deployment that
// declares no replicas (an HPA scales it), and a CRD with a conversion
// webhook whose caBundle cert-manager's cainjector writes.
func realFleetResources() []any {
	return []any{
		map[string]any{"name": "settings.yaml", "content": `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue}
`},
		map[string]any{"name": "web.yaml", "content": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "ghcr.io/example/web:1"}]}
`},
		map[string]any{"name": "crd.yaml", "content": diffCRD.manifest(realFleetNS, realFleetNS)},
	}
}

// TestRealFleet runs Fleet's own controller and agent (tools/fleet)
// against the API server, with Steward's rendered webhooks registered: a
// Bundle with inline resources becomes a BundleDeployment the agent
// installs with Helm, carrying the keys fleetguard reads. A person's edit
// is refused naming the bundle deployment; a break-glass edit is let
// through and the agent's drift correction reverts it; the HPA's scale and
// cainjector's caBundle pass; deleting the Bundle removes everything. None
// of the controller's and agent's writes is refused.
func TestRealFleet(t *testing.T) {
	for _, v := range []string{"FLEET_CONTROLLER", "FLEET_AGENT"} {
		if os.Getenv(v) == "" {
			t.Skipf("%s is not set: run through make e2e-extended, which builds Fleet's controller and agent (make fleet)", v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	testNamespace(t, ctx, realFleetNS)
	started := time.Now()
	fleet, err := env.StartFleet(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Fleet's controller and agent started in %s", time.Since(started).Round(time.Millisecond))

	bundle := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
		"metadata": map[string]any{"name": realFleetBundle, "namespace": harness.FleetWorkspace},
		"spec": map[string]any{
			"defaultNamespace": realFleetNS,
			"correctDrift":     map[string]any{"enabled": true},
			// Without it the agent marks the CRD helm.sh/resource-policy:
			// keep, and deleting the Bundle leaves it.
			"deleteCRDResources": true,
			"resources":          realFleetResources(),
			"targets":            []any{map[string]any{"clusterName": harness.FleetCluster}},
		},
	}}
	if err := env.Client.Create(ctx, bundle); err != nil {
		t.Fatalf("creating the Bundle: %v", err)
	}
	// Deleted before the controller and the agent stop (cleanups run last
	// first), so that a failed test leaves no Helm release behind.
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), bundle.DeepCopy()) })

	// The controller makes the BundleDeployment; the agent installs it.
	var bd unstructured.Unstructured
	harness.Eventually(t, realFleetTimeout, func() error {
		bds, err := fleet.BundleDeployments(ctx, realFleetBundle)
		if err != nil {
			return err
		}
		if len(bds) != 1 {
			return fmt.Errorf("%d BundleDeployments of Bundle %s in %s, want 1", len(bds), realFleetBundle, harness.FleetClusterNamespace)
		}
		bd = bds[0]
		return nil
	})
	settings, deploy := &corev1.ConfigMap{}, &appsv1.Deployment{}
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: realFleetNS, Name: name} }
	harness.Eventually(t, realFleetTimeout, func() error {
		if err := env.Client.Get(ctx, key("settings"), settings); err != nil {
			return fmt.Errorf("the agent has not installed the ConfigMap: %w", err)
		}
		return env.Client.Get(ctx, key("web"), deploy)
	})
	release := settings.Annotations["meta.helm.sh/release-name"]
	for _, obj := range []client.Object{settings, deploy} {
		logManagedFields(t, fmt.Sprintf("%T %s as the agent installed it", obj, obj.GetName()), obj)
		t.Logf("%T %s: labels %v, annotations %v", obj, obj.GetName(), obj.GetLabels(), obj.GetAnnotations())
		// The keys fleetguard reads, as Fleet's agent writes them.
		if obj.GetLabels()["objectset.rio.cattle.io/hash"] == "" {
			t.Errorf("%T %s has no objectset.rio.cattle.io/hash label", obj, obj.GetName())
		}
		for k, want := range map[string]string{
			"objectset.rio.cattle.io/id":     "default-" + bd.GetName(),
			"meta.helm.sh/release-name":      release,
			"meta.helm.sh/release-namespace": realFleetNS,
		} {
			if got := obj.GetAnnotations()[k]; got != want || got == "" {
				t.Errorf("%T %s: annotation %s is %q, want %q", obj, obj.GetName(), k, got, want)
			}
		}
		if !hasManager(obj, "fleetagent", metav1.ManagedFieldsOperationUpdate, "") {
			t.Errorf("%T %s has no managedFields entry of the agent's field manager fleetagent: %v", obj, obj.GetName(), managers(obj))
		}
	}
	owner := "Fleet (bundle deployment " + bd.GetName() + ", Helm release " + realFleetNS + "/" + release + ")"

	t.Run("APersonsEditIsRefused", func(t *testing.T) {
		wantEditRefused(ctx, t, realFleetNS, fleetguardHook+"fleetguard: ConfigMap "+realFleetNS+"/settings is managed by "+owner+
			"; manual changes diverge from Git and Fleet reverts them.", "Changed: /data/color.")
	})

	// With correctDrift the agent rolls the release back when what it
	// deployed changes: the chart's fields go back to Git's, the fields
	// the chart does not declare stay, those the API server defaulted when
	// the agent created the object included (here the Deployment's
	// revisionHistoryLimit and its pods' dnsPolicy). The ConfigMap's revert
	// comes after the Deployment's edit, so the Deployment has been
	// through the same rollback.
	t.Run("DriftCorrectionRevertsABreakGlassEdit", func(t *testing.T) {
		breakGlass := []string{"--as", "alice", "--as-group", "steward:break-glass", "-n", realFleetNS}
		_, warning := kubectlOK(t, ctx, "", append(breakGlass, "patch", "deployment", "web", "--type=merge",
			"-p", `{"spec":{"revisionHistoryLimit":3,"template":{"spec":{"dnsPolicy":"Default"}}}}`)...)
		t.Logf("Steward's answer to the break-glass edit of fields the API server defaulted: %s", strings.TrimSpace(warning))
		edited := time.Now()
		kubectlOK(t, ctx, "", append(breakGlass, "patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"color":"red"}}`)...)
		harness.Eventually(t, realFleetTimeout, func() error {
			cm := &corev1.ConfigMap{}
			if err := env.Client.Get(ctx, key("settings"), cm); err != nil {
				return err
			}
			if cm.Data["color"] != "blue" {
				return fmt.Errorf("the ConfigMap's color is %q; the agent has not put Git's blue back", cm.Data["color"])
			}
			return nil
		})
		t.Logf("the agent reverted the break-glass edit %s after it", time.Since(edited).Round(100*time.Millisecond))
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, key("web"), d); err != nil {
			t.Fatal(err)
		}
		if got := d.Spec.RevisionHistoryLimit; got == nil || *got != 3 || d.Spec.Template.Spec.DNSPolicy != corev1.DNSDefault {
			t.Errorf("the agent's rollback changed fields its chart does not declare: revisionHistoryLimit %v, dnsPolicy %s; want 3 and Default kept", got, d.Spec.Template.Spec.DNSPolicy)
		}
		// The agent reports the rollback in the BundleDeployment's status
		// at its next status update, which may come after the revert.
		harness.Eventually(t, realFleetTimeout, func() error {
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(bd.GroupVersionKind())
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&bd), cur); err != nil {
				return err
			}
			if nonModified, _, _ := unstructured.NestedBool(cur.Object, "status", "nonModified"); !nonModified {
				return fmt.Errorf("the BundleDeployment reports its objects modified: %v", cur.Object["status"])
			}
			return nil
		})
	})

	t.Run("TheAutoscalersScalePasses", func(t *testing.T) {
		if err := autoscale(ctx, realFleetNS, "web", 3, nil); err != nil {
			t.Fatalf("the HPA's scale of a Deployment whose replicas the bundle does not declare: %v", err)
		}
		if got, _ := readField(ctx, t, diffDeployment.gvk(), key("web"), "spec", "replicas"); got != "3" {
			t.Errorf("the Deployment's replicas are %s after the HPA's scale to 3", got)
		}
	})

	t.Run("CainjectorsCABundlePasses", func(t *testing.T) {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(diffCRD.gvk())
		crd.SetName(diffCRD.objectName(realFleetNS))
		ca, err := harness.NewCA("cert-manager-fleet")
		if err != nil {
			t.Fatal(err)
		}
		caBundle := base64.StdEncoding.EncodeToString(ca.PEM)
		patch := fmt.Sprintf(`{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":%q}}}}}`, caBundle)
		if err := patchAs(ctx, cainjectorUser, nil, crd, types.MergePatchType, patch, client.FieldOwner("cert-manager-cainjector")); err != nil {
			t.Fatalf("cainjector's caBundle write into the CRD the agent installed: %v", err)
		}
		if got, _ := readField(ctx, t, diffCRD.gvk(), client.ObjectKeyFromObject(crd), "spec", "conversion", "webhook", "clientConfig", "caBundle"); got != caBundle {
			t.Errorf("the CRD's caBundle is %q after cainjector's write", got)
		}
	})

	t.Run("DeletingTheBundleRemovesEverything", func(t *testing.T) {
		if err := env.Client.Delete(ctx, bundle.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		gone := func(obj client.Object) error {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%T %s is still there (%v)", obj, obj.GetName(), err)
		}
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(diffCRD.gvk())
		crd.SetName(diffCRD.objectName(realFleetNS))
		harness.Eventually(t, realFleetTimeout, func() error {
			bds, err := fleet.BundleDeployments(ctx, realFleetBundle)
			if err != nil {
				return err
			}
			if len(bds) > 0 {
				return fmt.Errorf("the BundleDeployment %s is still there", bds[0].GetName())
			}
			for _, obj := range []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: realFleetNS, Name: "settings"}},
				&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: realFleetNS, Name: "web"}}, crd} {
				if err := gone(obj); err != nil {
					return err
				}
			}
			// Helm's release record goes too.
			secrets := &corev1.SecretList{}
			if err := env.Client.List(ctx, secrets, client.InNamespace(realFleetNS), client.MatchingLabels{"owner": "helm", "name": release}); err != nil {
				return err
			}
			if len(secrets.Items) > 0 {
				return fmt.Errorf("Helm's release secret %s is still there", secrets.Items[0].Name)
			}
			return nil
		})
	})

	t.Run("NoWriteOfFleetIsRefused", func(t *testing.T) {
		agent := harness.FleetUser(harness.FleetAgentNamespace, harness.FleetAgentAccount)
		controller := harness.FleetUser(harness.FleetControllerNamespace, harness.FleetControllerAccount)
		wantWritesAllowed(t, env, "Fleet's controller and agent", func(ev harness.AuditEvent) bool {
			return ev.User.Username == agent || ev.User.Username == controller
		}, []string{
			"create bundledeployments " + bd.GetName() + " by " + controller,
			"create configmaps settings by " + agent,
			"patch configmaps settings by " + agent,
			"delete configmaps settings by " + agent,
			"delete deployments web by " + agent,
		})
	})
}
