package manifests

import (
	"fmt"
	"strings"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/certs"
)

// namespaceLabel is the label the API server sets on every Namespace to
// its name, which the webhooks' exclusion of Steward's namespace matches.
const namespaceLabel = "kubernetes.io/metadata.name"

// namespaceTransformer renders manifests/namespace: a kustomize
// ReplacementTransformer for a kustomization that sets `namespace:` over
// an overlay to list under `transformers:`.
//
// Kustomize's namespace transformer moves Steward's objects, the webhooks'
// Service references and the RBAC subjects, but not a namespace written
// inside a value: the serving certificate's DNS names, cert-manager's
// inject-ca-from annotation and the webhooks' exclusion of Steward's own
// namespace. Transformers listed under `transformers:` run after
// `namespace:` (replacements or components in Steward's own overlays would
// run before it, in their own layer, and copy the old namespace), so this
// one copies the namespace Steward's Service ended up in into each of
// those fields. The field paths are computed from the objects rendered
// here, so they follow the webhook list and the certificate.
func (in install) namespaceTransformer(base, overlay map[string][]any) (map[string]any, error) {
	var webhookTargets []any
	for _, obj := range base["base/webhooks.yaml"] {
		kind, paths := "", []string(nil)
		switch c := obj.(type) {
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			kind = "ValidatingWebhookConfiguration"
			for i, wh := range c.Webhooks {
				paths = append(paths, in.exclusionPaths(i, wh.NamespaceSelector)...)
			}
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			kind = "MutatingWebhookConfiguration"
			for i, wh := range c.Webhooks {
				paths = append(paths, in.exclusionPaths(i, wh.NamespaceSelector)...)
			}
		default:
			continue
		}
		if len(paths) == 0 {
			continue
		}
		webhookTargets = append(webhookTargets, replacementTarget(kind, in.name, "", paths, nil))
	}
	if len(webhookTargets) == 0 {
		return nil, fmt.Errorf("the webhook configurations exclude no namespace named %s", in.ns)
	}

	var certTargets []any
	for _, obj := range overlay["overlays/cert-manager/certificates.yaml"] {
		c, ok := obj.(*cmv1.Certificate)
		if !ok {
			continue
		}
		var paths []string
		for i, name := range c.Spec.DNSNames {
			if parts := strings.Split(name, "."); len(parts) > 1 && parts[1] == in.ns {
				paths = append(paths, fmt.Sprintf("spec.dnsNames.%d", i))
			}
		}
		if len(paths) > 0 {
			certTargets = append(certTargets, replacementTarget("Certificate", c.Name, "", paths, map[string]any{"delimiter": ".", "index": 1}))
		}
	}
	if len(certTargets) == 0 {
		return nil, fmt.Errorf("no serving certificate names the namespace %s", in.ns)
	}

	// The annotation exists in the cert-manager overlay only: selecting by
	// it leaves the self-managed overlay's configurations alone.
	key, _ := certs.InjectCAAnnotationFor(in.ns, in.certManagerNames())
	injectPath := []string{"metadata.annotations.[" + key + "]"}
	slash := map[string]any{"delimiter": "/", "index": 0}
	targets := append(webhookTargets, certTargets...)
	targets = append(targets,
		replacementTarget("ValidatingWebhookConfiguration", in.name, key, injectPath, slash),
		replacementTarget("MutatingWebhookConfiguration", in.name, key, injectPath, slash),
	)
	return map[string]any{
		"apiVersion": "builtin",
		"kind":       "ReplacementTransformer",
		"metadata":   map[string]any{"name": "steward-namespace"},
		"replacements": []any{map[string]any{
			"source":  map[string]any{"kind": "Service", "name": in.name, "fieldPath": "metadata.namespace"},
			"targets": targets,
		}},
	}, nil
}

// exclusionPaths are the field paths, in the webhook at index i, of the
// values that exclude Steward's namespace.
func (in install) exclusionPaths(i int, sel *metav1.LabelSelector) []string {
	if sel == nil {
		return nil
	}
	var paths []string
	for j, e := range sel.MatchExpressions {
		if e.Key != namespaceLabel || e.Operator != metav1.LabelSelectorOpNotIn {
			continue
		}
		for k, v := range e.Values {
			if v == in.ns {
				paths = append(paths, fmt.Sprintf("webhooks.%d.namespaceSelector.matchExpressions.%d.values.%d", i, j, k))
			}
		}
	}
	return paths
}

// replacementTarget is one target of a replacement: the fields at paths of the
// object of kind and name (carrying annotation, when given).
func replacementTarget(kind, name, annotation string, paths []string, options map[string]any) map[string]any {
	sel := map[string]any{"kind": kind, "name": name}
	if annotation != "" {
		sel["annotationSelector"] = annotation
	}
	t := map[string]any{"select": sel, "fieldPaths": paths}
	if options != nil {
		t["options"] = options
	}
	return t
}
