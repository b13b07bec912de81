package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestHelmChartInstallsAGuardingSteward installs what the Helm chart
// renders for a release in steward-helm with self-managed certificates
// and one more Fleet agent identity in its values: every object but the
// webhook configurations is applied with strict field validation, Steward
// runs with the chart's configuration and certificate flags, and the
// chart's own webhook configurations are registered, pointed at it. It
// proves the install works end to end: Steward fills the chart's Secret
// and injects its CA, a person's hand-made object carrying Fleet's keys is
// refused, the agent identity given in the values never reaches Steward,
// and neither does anything in Steward's own namespace.
func TestHelmChartInstallsAGuardingSteward(t *testing.T) {
	helm := helmBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	const (
		ns       = "steward-helm"
		deployer = "system:serviceaccount:gitops:deployer"
	)
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`certificates:
  mode: self-managed
config:
  rules:
    fleetguard:
      agentUsers:
      - system:serviceaccount:cattle-fleet-system:fleet-agent
      - `+deployer+`
`), 0o644); err != nil {
		t.Fatal(err)
	}
	rendered := helmTemplate(ctx, t, helm, "steward", "--namespace", ns, "--values", values)
	installAndProve(ctx, t, "helm template", rendered, ns, deployer)
}

// TestKustomizeNamespaceOverrideInstallsAGuardingSteward installs the
// self-managed overlay the way docs/install.md tells kustomize users to move
// Steward to another namespace: a kustomization with `namespace:` and
// manifests/namespace under `transformers:`. Built with kubectl, it works
// end to end as the chart does: Steward fills its Secret, a person's
// hand-made Fleet object is refused, the Fleet agent's write never reaches
// Steward, and nothing in its new namespace does.
func TestKustomizeNamespaceOverrideInstallsAGuardingSteward(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	const ns = "steward-kustomized"
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel := func(p string) string {
		r, err := filepath.Rel(dir, filepath.Join(root, "manifests", p))
		if err != nil {
			t.Fatal(err)
		}
		return filepath.ToSlash(r)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns +
		"\nresources:\n- " + rel("overlays/self-managed-certs") + "\ntransformers:\n- " + rel("namespace") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	rendered, errOut, err := env.Kubectl(ctx, "", "kustomize", dir)
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, errOut)
	}
	installAndProve(ctx, t, "kubectl kustomize", []byte(rendered), ns, "system:serviceaccount:cattle-fleet-system:fleet-agent")
}

// installAndProve installs rendered, an install of Steward into ns with
// self-managed certificates: every object but the webhook configurations
// is applied with strict field validation, Steward runs with the rendered
// configuration and certificate flags, and the rendered webhook
// configurations are registered, pointed at it. It proves the install
// guards: Steward fills the Secret, a person's hand-made object carrying
// Fleet's keys is refused, the Fleet agent identity agentUser never
// reaches Steward, and neither does anything in Steward's own namespace.
func installAndProve(ctx context.Context, t *testing.T, source string, rendered []byte, ns, agentUser string) {
	t.Helper()
	in := parseInstall(t, source, rendered, ns)
	webhooks, config, certArgs, install := in.webhooks, in.config, in.certArgs, in.objects

	// The namespace (helm install --create-namespace), then the objects.
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if out, errOut, err := env.Kubectl(ctx, install, "apply", "--server-side", "--force-conflicts", "--validate=strict", "-f", "-"); err != nil {
		t.Fatalf("applying the rendered objects: %v\n%s%s", err, out, errOut)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := env.RestartSteward(ctx, harness.DefaultConfig); err != nil {
			t.Errorf("restoring the default Steward: %v", err)
		}
		if out, errOut, err := env.Kubectl(ctx, install, "delete", "--ignore-not-found", "--wait=false", "-f", "-"); err != nil {
			t.Errorf("deleting the rendered objects: %v\n%s%s", err, out, errOut)
		}
		_ = env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	if _, err := env.RestartStewardWith(ctx, harness.StewardOptions{Config: config, Args: certArgs, Namespace: ns, Webhooks: &webhooks}); err != nil {
		t.Fatalf("starting Steward as the rendered install configures it: %v", err)
	}

	secret := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "steward-serving-cert"}, secret); err != nil {
		t.Fatal(err)
	}
	if len(secret.Data["tls.crt"]) == 0 || len(secret.Data["ca.crt"]) == 0 {
		t.Errorf("Steward did not fill the rendered Secret %s/steward-serving-cert with its CA and serving certificate: keys %v", ns, keys(secret.Data))
	}

	jane, err := env.As("jane", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	agent, err := env.As(agentUser, "system:serviceaccounts", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	fleetConfigMap := func(name, namespace string) *corev1.ConfigMap {
		meta := fleetMeta(name)
		meta.Namespace = namespace
		return &corev1.ConfigMap{ObjectMeta: meta}
	}
	if err := jane.Create(ctx, fleetConfigMap(ns+"-hand-made", "default")); err == nil || !strings.Contains(err.Error(), fleetguardHook) {
		t.Errorf("a person's ConfigMap carrying Fleet's keys: %v; want fleetguard's denial", err)
	}
	deployed := fleetConfigMap(ns+"-deployed-by-agent", "default")
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), deployed) })
	unchangedCalls(t, fleetguardPath, func() {
		if err := agent.Create(ctx, deployed); err != nil {
			t.Errorf("the agent identity given in the rendered configuration was refused: %v", err)
		}
		if err := jane.Create(ctx, fleetConfigMap(ns+"-in-stewards-namespace", ns)); err != nil {
			t.Errorf("a write in Steward's own namespace %s reached a webhook: %v", ns, err)
		}
	})
}

// renderedInstall is what an install of Steward renders, as the e2e
// harness runs it: the webhook configurations (registered by the harness,
// pointed at the Steward it runs), the configuration file, the
// certificate flags of the Deployment, and every other object as YAML.
type renderedInstall struct {
	webhooks harness.Webhooks
	config   string
	certArgs []string
	objects  string
}

// parseInstall reads rendered, an install of Steward into ns with
// self-managed certificates; it fails the test when an object lies outside
// ns or the install renders no configuration or self-managed flags.
func parseInstall(t *testing.T, source string, rendered []byte, ns string) renderedInstall {
	t.Helper()
	var in renderedInstall
	var err error
	if in.webhooks, err = harness.ParseWebhooks(source, rendered); err != nil {
		t.Fatal(err)
	}
	objs, err := harness.ParseObjects(source, rendered)
	if err != nil {
		t.Fatal(err)
	}
	var install bytes.Buffer
	for _, u := range objs {
		switch u.GetKind() {
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			continue // registered by the harness, pointed at the Steward it runs
		case "ConfigMap":
			if u.GetName() == "steward-config" {
				in.config, _, _ = unstructured.NestedString(u.Object, "data", "config.yaml")
			}
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			for _, a := range args {
				if strings.HasPrefix(a, "--cert-mode=") || strings.HasPrefix(a, "--cert-secret=") || strings.HasPrefix(a, "--service-name=") {
					in.certArgs = append(in.certArgs, a)
				}
			}
		}
		if u.GetNamespace() != "" && u.GetNamespace() != ns {
			t.Errorf("%s %s/%s is not in Steward's namespace %s", u.GetKind(), u.GetNamespace(), u.GetName(), ns)
		}
		doc, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		install.WriteString("---\n")
		install.Write(doc)
	}
	if in.config == "" || !strings.Contains(strings.Join(in.certArgs, " "), "--cert-mode=self-managed") {
		t.Fatalf("%s renders no configuration (%q) or no self-managed certificate flags (%v)", source, in.config, in.certArgs)
	}
	in.objects = install.String()
	return in
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// helmBinary is the helm the Makefile built ($HELM); tests that need it
// skip without it.
func helmBinary(t *testing.T) string {
	t.Helper()
	helm := os.Getenv("HELM")
	if helm == "" {
		t.Skip("HELM is not set: run through make, which builds helm")
	}
	return helm
}

// helmTemplate renders the chart charts/steward as release with helm's
// further arguments args.
func helmTemplate(ctx context.Context, t *testing.T, helm, release string, args ...string) []byte {
	t.Helper()
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return runHelm(ctx, t, helm, append([]string{"template", release, filepath.Join(root, "charts", "steward")}, args...)...)
}

// runHelm runs helm with args and returns what it printed, failing the
// test with helm's own error output when it fails.
func runHelm(ctx context.Context, t *testing.T, helm string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, helm, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}
