package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files of `steward check` from the current output")

// TestCheckGolden runs `steward check` over the YAML under
// testdata/check and compares stdout, stderr and the exit code with
// testdata/check/golden/<case>.golden. Run `go test ./cmd/steward -run
// TestCheckGolden -update` after an intended change, and review the diff.
func TestCheckGolden(t *testing.T) {
	const dir = "testdata/check"
	in := func(p string) string { return filepath.Join(dir, p) }
	// What every output format is shown on: findings of each kind, a
	// broken document, standard input.
	formatInput := func(format string) []string {
		return []string{"-o", format, "--flux-version", "2.8", in("list.yaml"), in("unknown.yaml"), in("malformed/syntax.yaml"), "-"}
	}
	const helmRelease = "apiVersion: helm.toolkit.fluxcd.io/v2beta2\nkind: HelmRelease\nmetadata:\n  name: podinfo\n  namespace: apps\n"
	cases := map[string]struct {
		reason string
		args   []string
		stdin  string
	}{
		"helm-rendered-default": {
			reason: "helm template output (leading --- and # Source comments, an empty document); the default target is the newest release Steward knows, so both old versions are removed",
			args:   []string{in("helm-rendered.yaml")},
		},
		"helm-rendered-2.7": {
			reason: "Flux 2.7 removed helm v2beta1: exit 1, the source v1beta2 stays a warning",
			args:   []string{"--flux-version", "2.7", in("helm-rendered.yaml")},
		},
		"kustomize-build-2.8": {
			reason: "kustomize build output; 2.8 removes kustomize and source v1beta2, helm v2 is current",
			args:   []string{"--flux-version=2.8", in("kustomize-build.yaml")},
		},
		"list-2.9": {
			reason: "kubectl -o yaml Lists, nested too: every item is checked and located",
			args:   []string{"--flux-version", "v2.9.0", in("list.yaml")},
		},
		"list-2.10": {
			reason: "Flux 2.10 stores Alert and Provider at v1 and deprecates v1beta3, which no release of the table removes yet",
			args:   []string{"--flux-version", "2.10", in("list.yaml")},
		},
		"list-2.8": {
			reason: "at 2.8 notification and image v1beta2 are deprecated, v1beta1 removed",
			args:   []string{"--flux-version", "2.8", in("list.yaml")},
		},
		"repo-directory": {
			reason: "a GitOps repository: recursive .yaml/.yml, hidden directories and chart templates skipped, non-Kubernetes YAML ignored; flags may follow paths",
			args:   []string{in("repo"), "--flux-version", "2.8"},
		},
		"flux2-example-default": {
			reason: "a slice of Flux's own example repository (flux2-kustomize-helm-example at f249b51, vendored unmodified): the newest Flux rejects its HelmReleases and HelmRepositories, so the check fails",
			args:   []string{in("flux2-kustomize-helm-example")},
		},
		"flux2-example-2.6": {
			reason: "the same repository against Flux 2.6, which still serves those versions: warnings, exit 0",
			args:   []string{"--flux-version", "2.6", in("flux2-kustomize-helm-example")},
		},
		"current-only": {
			reason: "current versions only: nothing printed but the summary, exit 0",
			args:   []string{"--flux-version", "2.9", in("current.yaml")},
		},
		"stdin": {
			reason: "- reads standard input, e.g. `kustomize build | steward check -`",
			args:   []string{"--flux-version", "2.8", "-"},
			stdin:  helmRelease,
		},
		"config-file": {
			reason: "the target comes from the Steward configuration file",
			args:   []string{"--config", in("steward-2.8.yaml"), in("kustomize-build.yaml")},
		},
		"flag-overrides-config": {
			reason: "--flux-version wins over the configuration file",
			args:   []string{"--config", in("steward-2.8.yaml"), "--flux-version", "2.6", in("kustomize-build.yaml")},
		},
		"fail-on-deprecated": {
			reason: "--fail-on-deprecated turns deprecated versions into failures",
			args:   []string{"--fail-on-deprecated", "--flux-version", "2.6", in("helm-rendered.yaml")},
		},
		"unknown-version": {
			reason: "a version of a known Flux kind that no release serves is reported and fails; unknown kinds are left alone",
			args:   []string{in("unknown.yaml")},
		},
		"exclude": {
			reason: "--exclude skips by path relative to the argument (a directory whole) and by base name",
			args:   []string{"--exclude", "apps/podinfo", "--exclude=apps.yaml", in("repo")},
		},
		"exclude-bad-glob": {
			reason: "a glob that cannot match is a usage error",
			args:   []string{"--exclude", "[", in("repo")},
		},
		"output-unknown": {
			reason: "an unknown output format is a usage error",
			args:   []string{"-o", "xml", in("current.yaml")},
		},
		"output-json": {
			reason: "-o json: findings, input errors and a summary in one document",
			args:   formatInput("json"),
			stdin:  helmRelease,
		},
		"output-sarif": {
			reason: "-o sarif: SARIF 2.1.0 for code scanning, input errors as malformed-input results",
			args:   formatInput("sarif"),
			stdin:  helmRelease,
		},
		"output-github": {
			reason: "-o github: workflow commands that annotate the pull request (standard input has no file to annotate)",
			args:   formatInput("github"),
			stdin:  helmRelease,
		},
		"malformed": {
			reason: "syntax errors, wrong types, duplicate keys and bad List items name file, line and document; the documents before and after them are still checked; exit 3",
			args:   []string{"--flux-version", "2.7", in("malformed"), in("current.yaml")},
		},
		"missing-path": {
			reason: "an unreadable path is an input error, and the other paths are still checked",
			args:   []string{in("does-not-exist.yaml"), in("helm-rendered.yaml")},
		},
		"invalid-flux-version": {
			reason: "a target that is not a release is a usage error",
			args:   []string{"--flux-version", "2.x", in("current.yaml")},
		},
		"flux-version-newer": {
			reason: "a release newer than the newest Steward knows is a usage error: Steward cannot tell what it removes",
			args:   []string{"--flux-version", "2.11", in("current.yaml")},
		},
		"invalid-config": {
			reason: "an invalid configuration file names the field; exit 3, as for every command",
			args:   []string{"--config", in("steward-invalid.yaml"), in("current.yaml")},
		},
		"no-paths": {
			reason: "nothing to check is a usage error",
			args:   []string{"--flux-version", "2.8"},
		},
		"unknown-flag": {
			reason: "an unknown flag is a usage error",
			args:   []string{"--target", "2.8", in("current.yaml")},
		},
		"help": {
			reason: "-h prints the usage and succeeds",
			args:   []string{"-h"},
		},
		"double-dash": {
			reason: "after -- everything is a path, even what looks like a flag",
			args:   []string{"--flux-version", "2.8", "--", in("current.yaml"), "--fail-on-deprecated"},
		},
	}
	// SARIF names Steward's version; builds stamp it, the golden files
	// must not depend on it.
	stamped := version
	version = "devel"
	defer func() { version = stamped }()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkStdin = strings.NewReader(tc.stdin)
			defer func() { checkStdin = os.Stdin }()
			var stdout, stderr bytes.Buffer
			code := runCheck(tc.args, &stdout, &stderr)
			got := fmt.Sprintf("# %s\n$ steward check %s\nexit status %d\n--- stdout\n%s--- stderr\n%s",
				tc.reason, strings.Join(tc.args, " "), code, stdout.String(), stderr.String())
			golden := filepath.Join(dir, "golden", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s: output differs from %s (-want +got):\n%s", tc.reason, golden, diff)
			}
		})
	}
}
