package certs

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// RBAC returns exactly the permissions self-managed mode uses, for the
// manifests to grant: nothing beyond its own Secret and its own two webhook
// configurations, each by name.
//
//   - list and watch: the informer caches, which cert-controller's and
//     Steward's caches restrict to the one object with a metadata.name field
//     selector, so resourceNames authorizes them.
//   - update: cert-controller writes the CA and serving certificate into the
//     Secret; Steward writes the CA bundle into the webhook configurations.
//
// There is no create: the Secret must exist (the manifests ship it empty,
// and create cannot be limited to a name), and there is no get or patch,
// which neither writer uses.
//
// namespacedRules belong in a Role in o.Namespace; clusterRules in a
// ClusterRole (webhook configurations are cluster-scoped).
func (o SelfManagedOptions) RBAC() (clusterRules, namespacedRules []rbacv1.PolicyRule) {
	verbs := []string{"list", "watch", "update"}
	clusterRules = []rbacv1.PolicyRule{{
		APIGroups:     []string{"admissionregistration.k8s.io"},
		Resources:     []string{"validatingwebhookconfigurations"},
		ResourceNames: []string{o.ValidatingWebhookConfiguration},
		Verbs:         verbs,
	}, {
		APIGroups:     []string{"admissionregistration.k8s.io"},
		Resources:     []string{"mutatingwebhookconfigurations"},
		ResourceNames: []string{o.MutatingWebhookConfiguration},
		Verbs:         verbs,
	}}
	namespacedRules = []rbacv1.PolicyRule{{
		APIGroups:     []string{""},
		Resources:     []string{"secrets"},
		ResourceNames: []string{o.SecretName},
		Verbs:         verbs,
	}}
	return clusterRules, namespacedRules
}

// SelfManagedRBAC returns the RBAC rules of the default self-managed
// settings, the ones the manifests ship.
func SelfManagedRBAC() (clusterRules, namespacedRules []rbacv1.PolicyRule) {
	return DefaultSelfManagedOptions().RBAC()
}
