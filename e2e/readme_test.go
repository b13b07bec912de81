package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/e2e/harness"
)

// walkthroughsDoc holds the sandbox walkthroughs.
const walkthroughsDoc = "docs/walkthroughs.md"

// walkthroughBlock returns the first ```sh block of walkthroughsDoc after
// heading.
func walkthroughBlock(t *testing.T, heading string) string {
	t.Helper()
	return markdownBlock(t, walkthroughsDoc, heading)
}

// markdownBlock returns the first ```sh block after heading in the
// repository's Markdown file at path.
func markdownBlock(t *testing.T, path, heading string) string {
	t.Helper()
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no heading %q", path, heading)
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatalf("%s has no sh block after %q", path, heading)
	}
	block, _, ok = strings.Cut(block, "\n```")
	if !ok {
		t.Fatalf("%s's sh block after %q is not closed", path, heading)
	}
	return block
}

// runScript runs a shell script from the repository's Markdown file doc
// with the environment's admin kubeconfig and returns what it printed,
// stdout and stderr interleaved as a reader of the walkthroughs would see
// them. The script goes on after a failing command, as a walkthrough whose
// refusals are the point does. Every warning it prints must be explained in
// doc (see explainsWarnings).
func runScript(t *testing.T, ctx context.Context, doc, script string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running the script: %v\n%s", err, out)
	}
	explainsWarnings(t, doc, string(out))
	return string(out)
}

// explainsWarnings fails the test for each warning in out ("Warning: ..."
// lines: Steward's, the API server's and kubectl's) that the Markdown file
// doc does not quote (warningQuote): a reader who runs a walkthrough sees
// nothing it does not explain.
func explainsWarnings(t *testing.T, doc, out string) {
	t.Helper()
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
	if err != nil {
		t.Fatal(err)
	}
	reported := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		_, warning, ok := strings.Cut(line, "Warning: ")
		if !ok {
			continue
		}
		quote := warningQuote(warning)
		if !strings.Contains(string(data), quote) && !reported[quote] {
			reported[quote] = true
			t.Errorf("%s does not explain a warning the walkthrough prints (quote %q):\n%s", doc, quote, line)
		}
	}
}

// warningQuote is what a document must quote of a warning, on one line:
// "Warning: ", its speaker (a rule or a field path, when the warning names
// one) and its first six words. Names in a walkthrough are fixed; what
// follows may wrap in the document.
func warningQuote(warning string) string {
	prefix := "Warning: "
	if speaker, rest, ok := strings.Cut(warning, ": "); ok && !strings.Contains(speaker, " ") {
		prefix, warning = prefix+speaker+": ", rest
	}
	words := strings.Fields(warning)
	return prefix + strings.Join(words[:min(len(words), 6)], " ")
}

// TestReadmeOLMWalkthrough runs docs/walkthroughs.md's OLM walkthrough as written,
// against OLM's real InstallPlan and Subscription CRDs: every object and
// status it writes is valid, each refusal it promises happens, and the
// plan is deleted at the end.
func TestReadmeOLMWalkthrough(t *testing.T) {
	env.LogOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := walkthroughBlock(t, "## OLM: an InstallPlan in flight cannot be deleted or un-approved")
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "delete", "namespace", "operators", "--wait=false")
	})
	out := runScript(t, ctx, walkthroughsDoc, script)
	for _, bad := range []string{"is invalid", "Required value", "Unsupported value", "error validating", "unknown field"} {
		if strings.Contains(out, bad) {
			t.Errorf("the walkthrough writes something OLM's CRDs reject (%q):\n%s", bad, out)
		}
	}
	for _, want := range []string{
		"installplanguard: InstallPlan operators/install-etcd-1 is Installing and owned by Subscription operators/etcd; deleting it while OLM is still working on it",
		"Refused: spec.approved from true to false.",
		"Warning: installplanguard: Subscription operators/etcd changes spec.installPlanApproval from Manual to Automatic while its InstallPlan operators/install-etcd-1 is Installing",
		"Refused: status.phase from Installing to Complete.",
		"(server dry run)",
		`installplan.operators.coreos.com "install-etcd-1" deleted`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the walkthrough's output does not say %q:\n%s", want, out)
		}
	}
	if _, _, err := env.Kubectl(ctx, "", "get", "installplan", "install-etcd-1", "-n", "operators"); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("the InstallPlan still exists after the walkthrough (%v):\n%s", err, out)
	}
}

// waitLines are shell functions the Crossplane walkthrough's test runs
// where a reader pauses: Steward's caches see a deletion (or its end) a
// moment after the API server, and a script is faster than a reader.
const waitLines = `
cat > probe-claim.yaml <<'PROBE'
apiVersion: database.example.org/v1alpha1
kind: PostgreSQLInstance
metadata: {name: db, namespace: default}
spec: {}
PROBE
wait_refused() {
  for _ in $(seq 1 120); do
    kubectl create --dry-run=server -f probe-claim.yaml 2>&1 | grep -q 'claimguard: ' && return 0
    sleep 0.5
  done
  echo "WAIT FAILED: the claim was never refused"
}
wait_allowed() {
  for _ in $(seq 1 120); do
    kubectl create --dry-run=server -f probe-claim.yaml >/dev/null 2>&1 &&
      kubectl $CROSSPLANE create --dry-run=server -f mr.yaml >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "WAIT FAILED: the claim and the MR were never allowed"
}
`

// TestReadmeCrossplaneWalkthrough runs docs/walkthroughs.md's Crossplane walkthrough
// as written, on Crossplane's real XRD CRD and provider-sql's real
// Database CRD, pausing where a reader would until Steward's caches have
// seen the deletion and its end: every refusal it promises happens, and
// the claim and the MR are created at the end.
func TestReadmeCrossplaneWalkthrough(t *testing.T) {
	env.LogOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	script := walkthroughBlock(t, "## Crossplane: re-creating during a Foreground deletion is refused")
	for marker, wait := range map[string]string{
		"# Someone applies the claim again": "wait_refused",
		"# Now both are created.":           "wait_allowed",
	} {
		if !strings.Contains(script, "\n"+marker) {
			t.Fatalf("the walkthrough has no step %q", marker)
		}
		script = strings.Replace(script, "\n"+marker, "\n"+wait+"\n"+marker, 1)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_, _, _ = env.Kubectl(bg, "", "delete", "postgresqlinstance", "db", "-n", "default", "--ignore-not-found")
		_, _, _ = env.Kubectl(bg, "", "delete", "databases.postgresql.sql.crossplane.io", "db-n3w11-xyz", "--ignore-not-found")
		dropFinalizers(t, bg, legacyDBGVK, "", "db-x7k2p-abcde")
		dropFinalizers(t, bg, pgXRGVK, "", "db-x7k2p")
	})
	out := runScript(t, ctx, walkthroughsDoc, strings.Replace(script, "\n", "\n"+waitLines, 1))
	for _, bad := range []string{"is invalid", "Required value", "Unsupported value", "error validating", "unknown field", "WAIT FAILED"} {
		if strings.Contains(out, bad) {
			t.Errorf("the walkthrough failed where it must not (%q):\n%s", bad, out)
		}
	}
	for _, want := range []string{
		"Warning: claimguard: XPostgreSQLInstance db-x7k2p is deleted with Foreground propagation: it stays until its 1 composed resource is gone: Database db-x7k2p-abcde",
		"claimguard: PostgreSQLInstance default/db cannot be created yet: XPostgreSQLInstance db-x7k2p, the composite resource of the previous claim default/db",
		"claimguard: XPostgreSQLInstance db-n3w11 for claim default/db cannot be created yet",
		`claimguard: Database db-n3w11-xyz with external name "db" cannot be created yet: Database db-x7k2p-abcde`,
		"postgresqlinstance.database.example.org/db created",
		"database.postgresql.sql.crossplane.io/db-n3w11-xyz created",
		`["postgresqlinstances","xpostgresqlinstances"] ["database.example.org"]`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the walkthrough's output does not say %q:\n%s", want, out)
		}
	}
}

// TestClaimguardReadmeMigrationWalkthrough runs claimguard's README
// walkthrough of an MR migrating to the namespaced .m. group, on
// provider-sql's real CRDs, pausing where a reader would until Steward's
// caches have seen the legacy Role's deletion and its end.
func TestClaimguardReadmeMigrationWalkthrough(t *testing.T) {
	env.LogOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const doc = "webhooks/claimguard/README.md"
	script := markdownBlock(t, doc, "### Migrating an MR to the namespaced group")
	waits := `
wait_role() { # refused|created
  for _ in $(seq 1 120); do
    out=$(kubectl $CROSSPLANE create --dry-run=server -f role.yaml 2>&1)
    case $1 in
    refused) echo "$out" | grep -q 'claimguard: ' && return 0 ;;
    created) echo "$out" | grep -q 'created' && return 0 ;;
    esac
    sleep 0.5
  done
  echo "WAIT FAILED: the namespaced Role was never $1"
}
`
	first := strings.Index(script, "kubectl $CROSSPLANE create -f role.yaml")
	last := strings.LastIndex(script, "kubectl $CROSSPLANE create -f role.yaml")
	if first < 0 || first == last {
		t.Fatalf("the walkthrough does not create role.yaml twice:\n%s", script)
	}
	script = script[:first] + "wait_role refused\n" + script[first:last] + "wait_role created\n" + script[last:]
	script = strings.Replace(script, "\n", "\n"+waits, 1)
	t.Cleanup(func() {
		bg := context.Background()
		dropFinalizers(t, bg, legacyRoleGVK, "", "app-x7k2p-role")
		_, _, _ = env.Kubectl(bg, "", "delete", "roles.postgresql.sql.m.crossplane.io", "app-q8w2z", "-n", "team-a", "--ignore-not-found")
		_, _, _ = env.Kubectl(bg, "", "delete", "namespace", "team-a", "--wait=false")
	})
	out := runScript(t, ctx, doc, script)
	for _, bad := range []string{"is invalid", "Required value", "unknown field", "WAIT FAILED"} {
		if strings.Contains(out, bad) {
			t.Errorf("the walkthrough failed where it must not (%q):\n%s", bad, out)
		}
	}
	for _, want := range []string{
		`claimguard: Role team-a/app-q8w2z with external name "app" cannot be created yet: Role app-x7k2p-role in postgresql.sql.crossplane.io (deleting for `,
		"postgresql.sql.crossplane.io and postgresql.sql.m.crossplane.io are the legacy cluster-scoped and the namespaced group of the same provider kind",
		"role.postgresql.sql.m.crossplane.io/app-q8w2z created",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the walkthrough's output does not say %q:\n%s", want, out)
		}
	}
}
