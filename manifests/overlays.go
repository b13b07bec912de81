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

// The kustomize overlays, by directory name under overlays/: the two ways
// to install Steward.
const (
	// OverlayCertManager: cert-manager issues the serving certificate and
	// injects its CA (the default).
	OverlayCertManager = "cert-manager"
	// OverlaySelfManaged: Steward creates, injects and rotates its own CA
	// and serving certificate.
	OverlaySelfManaged = "self-managed-certs"
)

// Overlays lists the overlays' names, the default first.
func Overlays() []string { return []string{OverlayCertManager, OverlaySelfManaged} }

// overlayFiles are an overlay's files besides its kustomization: the
// resources it adds to the base and the patches it applies to the base's
// objects, in the order its kustomization lists them.
type overlayFiles struct {
	resources, patches []string
}

// overlayParts are the files of each overlay.
var overlayParts = map[string]overlayFiles{
	OverlayCertManager: {resources: []string{"certificates.yaml"}, patches: []string{"inject-ca.yaml"}},
	OverlaySelfManaged: {resources: []string{"secret.yaml", "rbac.yaml"}, patches: []string{"deployment.yaml"}},
}

// overlayPath is the path under manifests/ of one of an overlay's files.
func overlayPath(overlay, file string) string { return "overlays/" + overlay + "/" + file }

// overlays renders the two installs: cert-manager issues the serving
// certificate (the default), or Steward manages its own.
func overlays() map[string][]byte {
	files := map[string][]byte{}
	for name, parts := range overlayParts {
		files[overlayPath(name, "kustomization.yaml")] = kustomization(append([]string{"../../base"}, parts.resources...), parts.patches)
	}
	return files
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
