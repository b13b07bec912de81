package manifests

import (
	"fmt"
	"strings"
)

// kustomization renders a kustomization.yaml listing resources and patches.
func kustomization(resources, patches []string) []byte {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for _, r := range resources {
		fmt.Fprintf(&b, "- %s\n", r)
	}
	if len(patches) > 0 {
		b.WriteString("patches:\n")
		for _, p := range patches {
			fmt.Fprintf(&b, "- path: %s\n", p)
		}
	}
	return []byte(b.String())
}

// overlays renders the two installs: cert-manager issues the serving
// certificate (the default), or Steward manages its own.
func overlays() map[string][]byte {
	return map[string][]byte{
		"overlays/cert-manager/kustomization.yaml": kustomization(
			[]string{"../../base", "certificates.yaml"},
			[]string{"inject-ca.yaml"},
		),
		"overlays/self-managed-certs/kustomization.yaml": kustomization(
			[]string{"../../base", "secret.yaml", "rbac.yaml"},
			[]string{"deployment.yaml"},
		),
	}
}

// overlayObjects are the typed objects the overlays add or patch with.
func (in install) overlayObjects() map[string][]any {
	return map[string][]any{
		"overlays/cert-manager/certificates.yaml":     in.certManagerObjects(),
		"overlays/cert-manager/inject-ca.yaml":        in.injectCAPatches(),
		"overlays/self-managed-certs/secret.yaml":     {in.selfManagedSecret()},
		"overlays/self-managed-certs/rbac.yaml":       in.selfManagedRBAC(),
		"overlays/self-managed-certs/deployment.yaml": {in.selfManagedDeploymentPatch()},
	}
}
