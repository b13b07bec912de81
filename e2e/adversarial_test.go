package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// The adversarial suite tries, through the real API server and the
// registrations Steward ships, every way its authors know to reach an end a
// guard exists to prevent: subresources, earlier writes that change what a
// guard keys on, collection deletes and preconditions. The actor has every
// RBAC right (the harness makes every authenticated user a cluster-admin)
// and is none of the identities a rule exempts. docs/security.md ("Security
// model") lists the same chains and their outcomes.

// adversary is the user every chain writes as.
const adversary = "mallory"

// A chain is a sequence of writes by the adversary. Each step says what it
// tries and the denial it must meet; a step the rule allows on purpose says
// why instead.
type chain struct {
	name  string
	steps []step
}

type step struct {
	what string
	// kubectl is run as the adversary; do runs instead when kubectl cannot
	// say it (DeleteCollection, preconditions, values read at run time).
	kubectl []string
	do      func(ctx context.Context) error
	// refused is the part of the denial the step must meet. When empty
	// the step must succeed, and allowed says why the rule lets it.
	refused string
	allowed string
	// skip, when set, says why the step is not run: the API server does
	// not serve what it writes through (a subresource of a later release).
	skip string
}

// runChains runs every chain as a subtest; a chain stops at its first
// step that does not behave as it says.
func runChains(ctx context.Context, t *testing.T, chains []chain) {
	t.Helper()
	for _, c := range chains {
		t.Run(c.name, func(t *testing.T) {
			for i, s := range c.steps {
				if s.skip != "" {
					t.Logf("step %d (%s) not run: %s", i+1, s.what, s.skip)
					continue
				}
				err := s.run(ctx)
				switch {
				case s.refused == "" && err != nil:
					t.Fatalf("step %d (%s) must be allowed (%s), got: %v", i+1, s.what, s.allowed, err)
				case s.refused != "" && err == nil:
					t.Fatalf("step %d (%s) was allowed; want a denial containing %q", i+1, s.what, s.refused)
				case s.refused != "" && !strings.Contains(err.Error(), s.refused):
					t.Fatalf("step %d (%s) failed, but not with the denial %q:\n%v", i+1, s.what, s.refused, err)
				}
			}
		})
	}
}

func (s step) run(ctx context.Context) error {
	if s.do != nil {
		return s.do(ctx)
	}
	_, _, err := env.Kubectl(ctx, "", append([]string{"--as", adversary}, s.kubectl...)...)
	return err
}

// unlessServed returns "" when the API server serves resource (such as
// "pods/resize") in groupVersion, else why a step that writes through it
// is not run: reason, what the release does instead.
func unlessServed(t *testing.T, groupVersion, resource, reason string) string {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == resource }) {
		return ""
	}
	return "the API server does not serve " + resource + ": " + reason
}
