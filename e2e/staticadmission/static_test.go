// Package staticadmission tests Steward's static admission configuration
// (steward manifests --static-dir) on an API server that reads it from its
// own disk (manifest-based admission control, Kubernetes 1.37): the
// webhooks enforce although Steward's API-registered configurations are
// deleted, and nobody but Steward and its installer may change those.
// It is a package of its own because the files must exist before the API
// server starts.
package staticadmission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
	"github.com/stewardhq/steward/manifests"
)

var env *harness.Env

// The harness's admin client, which registers Steward's webhooks, is the
// installer; Steward runs as the harness's admin kubeconfig's user.
const (
	installer = "admin"
	steward   = "steward-e2e-admin"
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	port, err := harness.FreePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cert, err := harness.NewServingCert()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "steward-static-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	files, err := manifests.Static(manifests.StaticOptions{URL: fmt.Sprintf("https://127.0.0.1:%d", port), CABundle: cert.CA, Dir: dir, Writers: []string{installer, steward}})
	if err == nil {
		err = manifests.Write(dir, files)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "staticadmission: rendering the static configuration: %v\n", err)
		return 1
	}
	e, err := harness.StartWith(ctx, harness.Options{APIServerFlags: map[string]string{
		"admission-control-config-file": filepath.Join(dir, "admission-configuration.yaml"),
	}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "staticadmission: starting the API server with the static configuration: %v\n", err)
		return 1
	}
	defer e.Stop()
	if _, err := e.StartStewardWith(ctx, harness.StewardOptions{Config: harness.DefaultConfig, ProvideCerts: true, ServingCert: &cert, Port: port}); err != nil {
		fmt.Fprintf(os.Stderr, "staticadmission: starting steward: %v\n", err)
		return 1
	}
	env = e
	return m.Run()
}

// fleetConfigMap carries the keys Fleet's agent puts on what it deploys:
// fleetguard refuses a person's write of it.
func fleetConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "default",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm", "objectset.rio.cattle.io/hash": "3e4c9a2f6b0d8e1a7c5b9d3f2e6a8c0b4d7f1e9a"},
		Annotations: map[string]string{"meta.helm.sh/release-name": "web-app", "meta.helm.sh/release-namespace": "default",
			"objectset.rio.cattle.io/id": "default-web-app"},
	}}
}

const fleetguardDenied = `admission webhook "fleetguard.steward.dev" denied the request`

func TestStaticConfigurationIsNotInTheAPI(t *testing.T) {
	ctx := context.Background()
	list := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := env.Client.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		if strings.HasSuffix(c.Name, manifests.StaticSuffix) {
			t.Errorf("the static configuration %s is listed through the API", c.Name)
		}
	}
	fake := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "steward" + manifests.StaticSuffix}}
	if err := env.Client.Create(ctx, fake); err == nil {
		t.Error("a configuration named like a static one was created through the API")
	}
}

func TestStaticPolicyRefusesOthersChangesToTheAPIRegistration(t *testing.T) {
	ctx := context.Background()
	jane, err := env.As("jane", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, vwc); err != nil {
		t.Fatal(err)
	}
	const refused = "may be changed only by Steward and its installer"
	weakened := vwc.DeepCopy()
	ignore := admissionregistrationv1.Ignore
	weakened.Webhooks[0].FailurePolicy = &ignore
	if err := jane.Update(ctx, weakened); err == nil || !strings.Contains(err.Error(), refused) {
		t.Errorf("jane (cluster-admin) weakened Steward's registration: %v; want the static policy's refusal", err)
	}
	if err := jane.Delete(ctx, vwc.DeepCopy()); err == nil || !strings.Contains(err.Error(), refused) {
		t.Errorf("jane (cluster-admin) deleted Steward's registration: %v; want the static policy's refusal", err)
	}
	if err := env.Client.Update(ctx, vwc.DeepCopy()); err != nil {
		t.Errorf("the installer was refused a write of Steward's registration: %v", err)
	}
}

// TestStaticWebhooksEnforceWithoutTheAPIRegistration deletes Steward's
// API-registered configurations (as the installer may) and proves the
// guards still hold: the API server calls Steward from its static files.
func TestStaticWebhooksEnforceWithoutTheAPIRegistration(t *testing.T) {
	ctx := context.Background()
	jane, err := env.As("jane", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: harness.WebhookConfigurationName}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: harness.WebhookConfigurationName}},
	} {
		if err := env.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	// The API server stops using a deleted configuration within moments;
	// the refusal below must hold throughout, not only at first.
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		cm := fleetConfigMap(fmt.Sprintf("static-hand-made-%d", i))
		if err := jane.Create(ctx, cm, client.DryRunAll); err == nil || !strings.Contains(err.Error(), fleetguardDenied) {
			t.Fatalf("with Steward's API registration deleted, a person's ConfigMap carrying Fleet's keys: %v; want fleetguard's denial from the static webhook", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	vwcs := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := env.Client.List(ctx, vwcs); err != nil {
		t.Fatal(err)
	}
	for _, c := range vwcs.Items {
		if c.Name == harness.WebhookConfigurationName {
			t.Errorf("the API registration %s still exists; the proof needs it gone", c.Name)
		}
	}
}
