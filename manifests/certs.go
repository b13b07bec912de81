package manifests

import (
	"github.com/stewardhq/steward/certs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selfManagedSecret ships the Secret empty so Steward needs only get and
// update on it, by name: it fills in the CA and serving certificate itself.
func (in install) selfManagedSecret() *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: in.meta(in.secretName()),
		Type:       corev1.SecretTypeOpaque,
	}
}

// selfManagedOptions are the self-managed mode's settings for the
// install: its Secret, Service and webhook configurations.
func (in install) selfManagedOptions() certs.SelfManagedOptions {
	o := certs.DefaultSelfManagedOptions()
	o.Namespace = in.ns
	o.SecretName = in.secretName()
	o.ServiceName = in.name
	o.ValidatingWebhookConfiguration = in.name
	o.MutatingWebhookConfiguration = in.name
	return o
}

// selfManagedDeploymentPatch switches the certificate mode and swaps the
// read-only Secret mount for a writable in-memory emptyDir that Steward
// writes its serving certificate into (the root filesystem stays read-only).
// It is a strategic merge patch: `secret: null` removes the base's source.
func (in install) selfManagedDeploymentPatch() map[string]any {
	o := in.selfManagedOptions()
	args := append(in.container().Args, "--cert-mode=self-managed",
		"--"+certs.FlagSecret+"="+o.SecretName, "--"+certs.FlagServiceName+"="+o.ServiceName,
		"--"+certs.FlagWebhookConfigName+"="+o.ValidatingWebhookConfiguration)
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": in.name, "namespace": in.ns},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{
				"name":         Name,
				"args":         args,
				"volumeMounts": []any{map[string]any{"mountPath": certDir, "name": "serving-cert", "readOnly": false}},
			}},
			"volumes": []any{map[string]any{
				"name":     "serving-cert",
				"secret":   nil,
				"emptyDir": map[string]any{"medium": "Memory"},
			}},
		}}},
	}
}

// certManagerNames name the install's cert-manager objects after it.
func (in install) certManagerNames() certs.CertManagerNames {
	return certs.CertManagerNamesFor(in.name)
}

// certManagerObjects are the Issuer/Certificate chain cert-manager turns
// into the serving certificate Secret the base Deployment mounts.
func (in install) certManagerObjects() []any {
	var objs []any
	for _, o := range certs.CertManagerObjectsNamed(in.ns, in.name, in.secretName(), in.certManagerNames()) {
		o.SetLabels(in.labels())
		objs = append(objs, o)
	}
	return objs
}

// injectCAPatches annotate both webhook configurations so cert-manager's CA
// injector writes the CA into every webhook's caBundle.
func (in install) injectCAPatches() []any {
	key, value := certs.InjectCAAnnotationFor(in.ns, in.certManagerNames())
	patch := func(kind string) map[string]any {
		return map[string]any{
			"apiVersion": "admissionregistration.k8s.io/v1",
			"kind":       kind,
			"metadata":   map[string]any{"name": in.name, "annotations": map[string]any{key: value}},
		}
	}
	return []any{patch("ValidatingWebhookConfiguration"), patch("MutatingWebhookConfiguration")}
}

// selfManagedRBAC grants self-managed mode its own Secret and its own two
// webhook configurations, by name, and nothing else.
func (in install) selfManagedRBAC() []any {
	clusterRules, namespacedRules := in.selfManagedOptions().RBAC()
	name := in.name + "-certs"
	binding := in.clusterRoleBinding(name)
	binding.RoleRef.Name = name
	return []any{in.clusterRole(name, clusterRules), binding, in.role(name, namespacedRules), in.roleBinding(name)}
}
