package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/e2e/harness"
)

// The Argo CD differential test's Application and namespace, and the page
// it writes.
const (
	argoDiffName = "realargocd-diff"
	argoDiffNS   = "realargocd-diff"
	argoDiffPage = "docs/argocd-differential.md"
)

// TestRealArgoCDDifferential makes each edit of the differential table
// (diffRows, without Flux's ssa: Merge row) to what the real Argo CD
// synced from Git, once with Steward's default configuration and once
// with argocdguard's undeclaredFields: mirror, and compares Steward's
// answer with what Argo CD's self-heal does with the edit after a hard
// refresh (runDifferential). The table of the two runs is
// docs/argocd-differential.md (-update rewrites it).
func TestRealArgoCDDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tool := &diffTool{
		name: "Argo CD", controller: "Argo CD", ns: argoDiffNS, guard: "argocdguard", hook: argocdguardHook,
		page: argoDiffPage, ignore: "the Application's `ignoreDifferences` lists", intro: argoDiffIntro,
	}
	rows := tool.rows(t)
	files, ignore := tool.gitFiles(rows, func(base, pointer string) map[string]any {
		return map[string]any{"kind": "ConfigMap", "name": base, "namespace": argoDiffNS, "jsonPointers": []any{pointer}}
	})
	ra := startRealArgoCD(ctx, t, argoApp{name: argoDiffName, ns: argoDiffNS, files: files, spec: map[string]any{"ignoreDifferences": ignore}})
	tool.reconcile = func(ctx context.Context, t *testing.T) {
		if _, err := ra.argo.Refresh(ctx, ra.app); err != nil {
			t.Fatal(err)
		}
	}
	runDifferential(ctx, t, tool, rows)
}

// argoDiffIntro is docs/argocd-differential.md above its table.
func argoDiffIntro(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`# What Argo CD does with an edit, and what Steward answers

<!-- Written by TestRealArgoCDDifferential (e2e/realargocd_differential_test.go) from its run; ` +
		"`go test -p 1 -run TestRealArgoCDDifferential ./e2e -update`" + ` (with the environment of make e2e) rewrites it, and the test fails when its run differs from this page. -->

This page is the outcome of one end-to-end test. It runs Argo CD's own
application controller and repo server against a real API server with
Steward's webhooks registered, makes edits to what Argo CD synced, and
compares what Steward answers with what Argo CD's self-heal does next.
[flux-differential.md](flux-differential.md) is the same table for Flux.

`)
	fmt.Fprintf(&b, "Versions: Argo CD %s (application controller and repo server), with Argo CD %s's CRDs, on kube-apiserver %s.\n\n",
		moduleVersion(t, "ARGOCD", "github.com/argoproj/argo-cd/v3"), harness.ArgoCDRelease, serverVersion(t))
	b.WriteString(`**What was run.** A Git repository is served from 127.0.0.1. An
Application with automated sync, ` + "`prune`" + ` and ` + "`selfHeal`" + ` (Argo CD's
default client-side apply, annotation tracking) syncs it. Git holds
Deployments that declare their image (one declares ` + "`replicas: 2`" + ` too),
ConfigMaps that declare ` + "`data.color`" + ` (the Application's
` + "`ignoreDifferences`" + ` lists the ` + "`data.color`" + ` of one), and a CRD with
a conversion webhook. Each edit has an object of its own.

Each edit is first made the way its writer makes it, and Steward's answer
is recorded. If Steward refuses it, the edit is made again by a member of
` + "`steward:break-glass`" + `, so that it lands. Then the Application is
refreshed (hard), self-heal syncs it if Argo CD finds it out of sync, and
the field is read again. Argo CD's outcome is **kept** (the edit is still
there) or **reverted** (Git's value is back). The whole table runs twice,
on fresh objects: with Steward's default configuration, and with
argocdguard's ` + "`undeclaredFields: mirror`" + `.

**How to read it.** Steward agrees with Argo CD when it allows what Argo
CD keeps and refuses what Argo CD reverts; its denial then says
"reverted". By default Steward also refuses a person's change of a field
Git does not declare, even though Argo CD keeps it. That denial says
"which Git does not declare", never "reverted", and the last column shows
it as "refuses what Argo CD keeps". With ` + "`mirror`" + `, Steward allows
those changes, as Argo CD keeps them. The rules are in
[security.md](security.md).

`)
	return b.String()
}
