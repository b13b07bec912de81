package gitops

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/object"
)

// Control writes are how people steer GitOps tools through the tools' own
// objects: requesting a reconcile, suspending, refreshing or syncing. They
// change nothing the tools deploy, so no guard counts them as edits, even
// where the object is itself deployed from Git (a Kustomization its parent
// applies, an Application of an app of apps).
var (
	controlAnnotations = MustPointers(
		"/metadata/annotations/reconcile.fluxcd.io~1requestedAt",
		"/metadata/annotations/reconcile.fluxcd.io~1forceAt",
		"/metadata/annotations/reconcile.fluxcd.io~1resetAt",
		"/metadata/annotations/argocd.argoproj.io~1refresh",
	)
	// fluxControl adds spec.suspend (flux suspend, flux resume) on Flux's
	// kinds, and the record of who suspended, which Steward's suspendnotice
	// writes along with it.
	fluxControl = append(MustPointers(
		"/spec/suspend",
		"/metadata/annotations/steward.dev~1suspended-at",
		"/metadata/annotations/steward.dev~1suspended-by",
	), controlAnnotations...)
	// applicationControl adds an Application's sync operation (argocd app
	// sync) and its skip-reconcile annotation.
	applicationControl = append(MustPointers("/operation", "/metadata/annotations/argocd.argoproj.io~1skip-reconcile"), controlAnnotations...)
)

// controlPaths are the control writes of an object of the given kind.
func controlPaths(gk schema.GroupKind) []object.Pointer {
	switch {
	case strings.HasSuffix(gk.Group, ".toolkit.fluxcd.io"):
		return fluxControl
	case gk.Group == "argoproj.io" && gk.Kind == "Application":
		return applicationControl
	}
	return controlAnnotations
}
