package argocdguard

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stewardhq/steward/webhooks/rule"
)

// projectNamed is an AppProject in argocd, as the cache keeps it.
func projectNamed(name string, accounts ...map[string]any) *project {
	list := make([]any, len(accounts))
	for i, a := range accounts {
		list[i] = a
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": name, "namespace": "argocd"},
		"spec":     map[string]any{"destinationServiceAccounts": list},
	}}
	p, err := keepProject(u)
	if err != nil {
		panic(err)
	}
	return p.(*project)
}

// TestSyncImpersonationTrustsTheDestinationsServiceAccount holds the
// guard to Argo CD's choice of the service account a sync runs as: the
// first entry of the AppProject whose globs match the destination.
func TestSyncImpersonationTrustsTheDestinationsServiceAccount(t *testing.T) {
	prod := projectNamed("default",
		map[string]any{"server": "https://other.example.com", "namespace": "*", "defaultServiceAccount": "elsewhere"},
		map[string]any{"server": "https://kubernetes.default.svc", "namespace": "def*", "defaultServiceAccount": "guestbook-deployer"},
		map[string]any{"server": "*", "namespace": "*", "defaultServiceAccount": "argocd:fallback"},
	)
	cases := []struct {
		name, reason, user string
		impersonation      bool
		allowed            bool
	}{
		{"TheImpersonatedAccount", "Syncs to default run as guestbook-deployer in the destination namespace.", "system:serviceaccount:default:guestbook-deployer", true, true},
		{"ALaterMatch", "Argo CD takes the first match, so the catch-all's account is not the sync's.", "system:serviceaccount:argocd:fallback", true, false},
		{"ImpersonationOff", "Without the setting the account is an operator like any other, and the image is Git's.", "system:serviceaccount:default:guestbook-deployer", false, false},
		{"APerson", "A person is no sync.", "jane", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apps := appsCache(obj(guestbookApp))
			apps.projects = map[string]*project{"argocd/default": prod}
			r := New(Config{SyncImpersonation: tc.impersonation}, "steward:break-glass").WithApplications(apps)
			got := r.Handle(context.Background(), rule.NewRequest(imageChange().User(tc.user, "system:serviceaccounts").Build()))
			if got.Allowed != tc.allowed {
				t.Errorf("%s\nallowed = %v, want %v: %s", tc.reason, got.Allowed, tc.allowed, got.Result.Message)
			}
			if tc.allowed && !strings.Contains(got.Result.Message, "which writes for Argo CD Application argocd/guestbook") {
				t.Errorf("the answer does not say whom the account writes for: %s", got.Result.Message)
			}
		})
	}
}
