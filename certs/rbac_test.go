package certs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestRBACGrantsOnlyOwnObjectsByName(t *testing.T) {
	cluster, namespaced := SelfManagedRBAC()
	wantCluster := []rbacv1.PolicyRule{
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"}, ResourceNames: []string{"steward"}, Verbs: []string{"list", "watch", "update"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations"}, ResourceNames: []string{"steward"}, Verbs: []string{"list", "watch", "update"}},
	}
	wantNamespaced := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"steward-serving-cert"}, Verbs: []string{"list", "watch", "update"}},
	}
	if diff := cmp.Diff(wantCluster, cluster); diff != "" {
		t.Errorf("cluster rules (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantNamespaced, namespaced); diff != "" {
		t.Errorf("namespaced rules (-want +got):\n%s", diff)
	}
	for _, r := range append(cluster, namespaced...) {
		if len(r.ResourceNames) == 0 {
			t.Errorf("rule %v is not limited by name", r)
		}
		for _, v := range r.Verbs {
			if v == "create" || v == "delete" || v == "*" {
				t.Errorf("rule %v grants %q", r, v)
			}
		}
	}
}
