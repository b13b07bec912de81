package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestSuspendNoticeFollowsAFluxUpgrade upgrades a Flux CRD under a running
// Steward from serving v1beta2 only to serving v1 only, what the upgrades
// to Flux 2.7 (image automation v1 added) and 2.9 (v1beta2 removed) do
// together. Steward's cache of the kind moves to v1 without a restart: a
// suspension recorded after the upgrade, which no informer on v1beta2
// could see, still rewrites the object's events, and Steward stays ready
// throughout.
func TestSuspendNoticeFollowsAFluxUpgrade(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	ns := "flux-upgrade"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	crd := snInstallCRD(ctx, t, "image.toolkit.fluxcd.io", "ImageUpdateAutomation", "imageupdateautomations", snCRDVersion("v1beta2", true, true))

	// suspended creates an automation through version, suspends it as a
	// user would, and waits until its controller's events are rewritten.
	suspended := func(version, name string) {
		t.Helper()
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "image.toolkit.fluxcd.io/" + version,
			"kind":       "ImageUpdateAutomation",
			"metadata":   map[string]any{"name": name, "namespace": ns},
			"spec":       map[string]any{"interval": "5m", "sourceRef": map[string]any{"kind": "GitRepository", "name": "apps"}},
		}}
		harness.Eventually(t, 30*time.Second, func() error { return env.Client.Create(ctx, obj) })
		if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ns, "patch", "imageupdateautomations."+version+".image.toolkit.fluxcd.io", name, "--type=merge", "-p", `{"spec":{"suspend":true}}`); err != nil {
			t.Fatal(err)
		}
		snEventuallyRewritten(ctx, t, "image-automation-controller",
			corev1.ObjectReference{APIVersion: "image.toolkit.fluxcd.io/" + version, Kind: "ImageUpdateAutomation", Name: name, Namespace: ns},
			"no updates made, next run in 5m0s", "no updates made (suspended: no further runs until resumed)")
	}
	suspended("v1beta2", "before")

	// The upgrade: v1 becomes the stored and only served version.
	harness.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return err
		}
		crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{snCRDVersion("v1beta2", false, false), snCRDVersion("v1", true, true)}
		return env.Client.Update(ctx, crd)
	})
	suspended("v1", "after")
}

// snInstallCRD installs a namespaced Flux CRD that keeps unknown fields,
// and removes it when the test ends.
func snInstallCRD(ctx context.Context, t *testing.T, group, kind, plural string, versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    group,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
			Scope:    apiextensionsv1.NamespaceScoped,
			Versions: versions,
		},
	}
	if err := env.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), crd); err != nil {
			t.Errorf("removing the CRD: %v", err)
		}
	})
	return crd
}

// snCRDVersion is one version of such a CRD, with a status subresource.
func snCRDVersion(name string, served, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
	return apiextensionsv1.CustomResourceDefinitionVersion{
		Name: name, Served: served, Storage: storage,
		Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", XPreserveUnknownFields: ptr.To(true),
		}},
	}
}

// snEventuallyRewritten records events of a Flux controller about a
// suspended object until one is stored rewritten as want, which happens
// once Steward's cache of the object's kind has seen the suspension.
// Steward must stay ready meanwhile.
func snEventuallyRewritten(ctx context.Context, t *testing.T, controller string, about corev1.ObjectReference, message, want string) {
	t.Helper()
	c, err := env.As("system:serviceaccount:flux-system:" + controller)
	if err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 90*time.Second, func() error {
		resp, err := http.Get(env.Steward.HealthURL("/readyz"))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("Steward became unready (%s) after a CRD changed", resp.Status)
		}
		now := metav1.Now()
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: snEventName(about.Name), Namespace: about.Namespace},
			InvolvedObject: about,
			Reason:         "ReconciliationSucceeded",
			Message:        message,
			Type:           corev1.EventTypeNormal,
			Source:         corev1.EventSource{Component: controller},
			FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}
		if err := c.Create(ctx, ev); err != nil {
			return err
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ev), ev); err != nil {
			return err
		}
		if ev.Message != want {
			return fmt.Errorf("stored message %q, want %q", ev.Message, want)
		}
		return nil
	})
}
