package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// overrideNamespace writes a kustomization that installs overlay (a
// directory under manifests/) into ns the way docs/install.md tells kustomize
// users to: `namespace:` with manifests/namespace under `transformers:`.
// Without the transformer it is the plain override kustomize offers.
func overrideNamespace(t *testing.T, overlay, ns string, withTransformer bool) string {
	t.Helper()
	dir := t.TempDir()
	rel := func(p string) string {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := filepath.Rel(dir, abs)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.ToSlash(r)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns + "\nresources:\n- " + rel(overlay) + "\n"
	if withTransformer {
		k += "transformers:\n- " + rel("namespace") + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestKustomizeNamespaceOverrideFollowsEverywhere: a kustomization that
// sets `namespace:` over either overlay and lists manifests/namespace under
// `transformers:` builds the very objects `steward manifests --namespace`
// renders: the certificate's DNS names, cert-manager's CA injection and
// the webhooks' exclusion of Steward's own namespace follow, as the
// objects and RBAC subjects do. Without the transformer they do not,
// which is why it ships.
func TestKustomizeNamespaceOverrideFollowsEverywhere(t *testing.T) {
	const ns = "platform-guard"
	want := renderTo(t, Options{Namespace: ns})
	for _, overlay := range []string{"cert-manager", "self-managed-certs"} {
		t.Run(overlay, func(t *testing.T) {
			got := kustomize(t, overrideNamespace(t, filepath.Join("overlays", overlay), ns, true))
			if diff := byKeyDiff(t, kustomize(t, filepath.Join(want, "overlays", overlay)), got); diff != "" {
				t.Errorf("namespace: %s with manifests/namespace differs from steward manifests --namespace %s (-want +got):\n%s", ns, ns, diff)
			}
			for _, o := range got {
				data, _ := yaml.Marshal(o.Object)
				if strings.Contains(string(data), DefaultNamespace) {
					t.Errorf("%s %s still names %s", o.GetKind(), o.GetName(), DefaultNamespace)
				}
			}

			plain := kustomize(t, overrideNamespace(t, filepath.Join("overlays", overlay), ns, false))
			if byKeyDiff(t, kustomize(t, filepath.Join(want, "overlays", overlay)), plain) == "" {
				t.Error("kustomize's namespace: alone already renders everything for the namespace; manifests/namespace is needless")
			}
		})
	}
}
