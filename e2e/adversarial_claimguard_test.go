package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestAdversarialClaimguardXRDCannotWidenItsRegistration proves that an XRD
// naming a Kubernetes kind, or another project's CRD, never enters
// claimguard's fail-closed webhook rules: Steward would otherwise judge,
// and while it is down block, every write of that kind in the cluster.
// The XRD is ignored with a warning in the log and a metric.
func TestAdversarialClaimguardXRDCannotWidenItsRegistration(t *testing.T) {
	env.LogOnFailure(t)
	ctx := context.Background()
	ignoredBefore, err := env.Steward.Counter("steward_claimguard_ignored_xrds", nil)
	if err != nil {
		t.Fatal(err)
	}
	xrd := func(name, group, kind, plural string) string {
		return fmt.Sprintf(`apiVersion: apiextensions.crossplane.io/v1
kind: CompositeResourceDefinition
metadata: {name: %s}
spec:
  group: %q
  names: {kind: %s, plural: %s}
  versions:
  - {name: v1, served: true, referenceable: true, schema: {openAPIV3Schema: {type: object}}}
`, name, group, kind, plural)
	}
	hostile := map[string]struct{ xrd, resource string }{
		"deployments.apps": {xrd("deployments.apps", "apps", "Deployment", "deployments"), "deployments.apps"},
		"gitrepositories.source.toolkit.fluxcd.io": {xrd("gitrepositories.source.toolkit.fluxcd.io", "source.toolkit.fluxcd.io", "GitRepository", "gitrepositories"),
			"gitrepositories.source.toolkit.fluxcd.io"},
	}
	for _, h := range hostile {
		installXRD(t, ctx, h.xrd)
	}
	// A claimguard resync follows every XRD event; wait until both are
	// counted as ignored, then for the rules to have had time to follow.
	harness.Eventually(t, claimguardTimeout, func() error {
		n, err := env.Steward.Counter("steward_claimguard_ignored_xrds", nil)
		if err != nil {
			return err
		}
		if n < ignoredBefore+2 {
			return fmt.Errorf("steward_claimguard_ignored_xrds = %v, want %v", n, ignoredBefore+2)
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	rules, err := claimguardRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range hostile {
		if slices.Contains(rules, h.resource) {
			t.Errorf("XRD %s put %s into claimguard's rules: %v", name, h.resource, rules)
		}
		if !strings.Contains(env.Steward.Log(), `"xrd":"`+name+`"`) {
			t.Errorf("Steward's log has no warning about the ignored XRD %s", name)
		}
	}
	// A person's Deployment never reaches claimguard.
	unchangedCalls(t, "/validate/claimguard", func() {
		kubectlOK(t, ctx, "", "--as", adversary, "create", "deployment", "adversary-web", "--image=ghcr.io/example/web:1", "-n", "default", "--dry-run=server")
	})
}

// TestAdversarialClaimguardDeletingResourcesKeepTheirKeys runs the
// two-step collision: while a composed MR deletes (its provider still
// destroying the external resource), rename its external name, or strip
// the labels claimguard finds it by, so that a new MR with the same external
// name, or a new claim, is no longer refused. Each first step is refused.
func TestAdversarialClaimguardDeletingResourcesKeepTheirKeys(t *testing.T) {
	env.LogOnFailure(t)
	ctx := context.Background()
	const name = "adversary-db-abcde"
	createUnstructured(t, ctx, composedDB(name, "database.example.org/v1alpha1", "XPostgreSQLInstance", "adversary-db", "00000000-0000-0000-0000-0000000000aa", "adversary-ext", "", true))
	t.Cleanup(func() { dropFinalizers(t, ctx, legacyDBGVK, "", name) })
	kubectlOK(t, ctx, "", "delete", "databases.postgresql.sql.crossplane.io", name, "--wait=false")

	const refused = "claimguard: Database " + name + " is being deleted; changing "
	runChains(ctx, t, []chain{{
		name: "HideADeletingMRThenReuseItsExternalName",
		steps: []step{
			{what: "rename the external name of the MR being deleted", refused: refused + `annotation crossplane.io/external-name from "adversary-ext" to "elsewhere"`,
				kubectl: []string{"annotate", "databases.postgresql.sql.crossplane.io", name, "crossplane.io/external-name=elsewhere", "--overwrite"}},
			{what: "remove its external name", refused: refused + `annotation crossplane.io/external-name from "adversary-ext" to none`,
				kubectl: []string{"annotate", "databases.postgresql.sql.crossplane.io", name, "crossplane.io/external-name-"}},
			{what: "remove its claim labels", refused: refused + `label crossplane.io/claim-name from "db" to none and label crossplane.io/claim-namespace from "default" to none`,
				kubectl: []string{"label", "databases.postgresql.sql.crossplane.io", name, "crossplane.io/claim-name-", "crossplane.io/claim-namespace-"}},
			{what: "remove its composite label", refused: refused + `label crossplane.io/composite from "adversary-db" to none`,
				kubectl: []string{"label", "databases.postgresql.sql.crossplane.io", name, "crossplane.io/composite-"}},
			{what: "label it otherwise", allowed: "labels claimguard does not read are not its business",
				kubectl: []string{"label", "databases.postgresql.sql.crossplane.io", name, "team=db"}},
		},
	}})
}
