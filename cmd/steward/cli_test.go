package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/check"
	"github.com/stewardhq/steward/webhooks/apimigration"
)

// flagNames lists a command's flags as they are typed: --name.
func flagNames(c command) []string {
	var names []string
	c.flags().VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	return names
}

func TestEveryCommandHasHelpWithExamplesAndEveryFlag(t *testing.T) {
	for _, c := range commands() {
		for _, args := range [][]string{{"help", c.name}, {c.name, "--help"}, {c.name, "-h"}} {
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != 0 || stderr.Len() > 0 {
				t.Errorf("steward %s: exit %d, stderr %q; want 0 and help on stdout", strings.Join(args, " "), code, stderr.String())
				continue
			}
			help := stdout.String()
			for _, want := range append([]string{"Usage: steward " + c.name, "\nExamples:\n  "}, flagNames(c)...) {
				if !strings.Contains(help, want) {
					t.Errorf("steward %s does not show %q:\n%s", strings.Join(args, " "), want, help)
				}
			}
		}
	}
}

func TestOverviewListsEveryCommand(t *testing.T) {
	var stdout bytes.Buffer
	if code := run([]string{"--help"}, &stdout, &stdout); code != 0 {
		t.Fatalf("steward --help exited %d", code)
	}
	for _, c := range commands() {
		if !strings.Contains(stdout.String(), "  "+c.name+" ") {
			t.Errorf("steward --help does not list %s:\n%s", c.name, stdout.String())
		}
	}
}

// writeKubeconfig writes a kubeconfig naming the API server at server,
// with a token, and returns its path.
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	doc := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "` + server + `", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: "not-a-valid-token"}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// closedPort returns an address on which nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestEveryCommandExitsByTheTable runs each command with a bad command
// line, a bad configuration file and a cluster it cannot use, and checks
// the exit code and the first line of stderr against the table in
// docs/cli.md: 2 bad usage, 3 bad configuration file, 4 no usable cluster,
// 1 problems found. A usage error is the error and the hint alone: no help
// dump.
func TestEveryCommandExitsByTheTable(t *testing.T) {
	defer func(w time.Duration) { apiServerWait = w }(apiServerWait)
	apiServerWait = 0
	t.Setenv("KUBECONFIG", "")
	unauthorized := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
	}))
	defer unauthorized.Close()
	missingKubeconfig := filepath.Join(t.TempDir(), "no-such-kubeconfig")
	refused := writeKubeconfig(t, unauthorized.URL)
	unreachable := writeKubeconfig(t, "https://"+closedPort(t))
	const (
		invalidConfig = "testdata/config/invalid-fleetguard.yaml"
		unknownField  = "testdata/config/unknown-field.yaml"
		invalidField  = `rules.fleetguard.ignoredFields[0].paths[1]: Invalid value: "spec": not an RFC 6901 JSON pointer`
	)
	tests := []struct {
		args []string
		code int
		// first is what stderr's first line starts with.
		first string
	}{
		{nil, exitUsage, "Usage: steward <command> [flags]"},
		{[]string{"serve-all"}, exitUsage, `steward: unknown command "serve-all"`},
		{[]string{"help", "serve-all"}, exitUsage, `steward help: unknown command "serve-all"`},

		{[]string{"serve", "--prot", "9443"}, exitUsage, "steward serve: flag provided but not defined: --prot"},
		{[]string{"serve", "--port", "http"}, exitUsage, `steward serve: invalid value "http" for flag --port: parse error`},
		{[]string{"serve", "--port", "0"}, exitUsage, "steward serve: --port: 0 is not a TCP port (1-65535)"},
		{[]string{"serve", "extra"}, exitUsage, "steward serve: unexpected arguments: extra"},
		{[]string{"serve", "--config", invalidConfig}, exitConfig, "steward serve: configuration " + invalidConfig + " is invalid: " + invalidField},
		{[]string{"serve", "--config", unknownField}, exitConfig, "steward serve: configuration " + unknownField + `: unknown field "rules.fleetguard.agentUser"`},
		{[]string{"serve", "--config", "testdata/config/missing.yaml"}, exitConfig, "steward serve: reading configuration: open testdata/config/missing.yaml"},
		{[]string{"serve", "--kubeconfig", missingKubeconfig}, exitCluster, "steward serve: --kubeconfig " + missingKubeconfig + ": stat " + missingKubeconfig + ": no such file or directory"},
		{[]string{"serve", "--kubeconfig", unreachable}, exitCluster, "steward serve: cannot reach the API server at https://127.0.0.1:"},
		{[]string{"serve", "--kubeconfig", refused}, exitCluster, "steward serve: the API server at " + unauthorized.URL + " refused the credentials (401 Unauthorized)"},

		{[]string{"audit", "-o", "yaml"}, exitUsage, `steward audit: invalid value "yaml" for flag -o: want one of text, json`},
		{[]string{"audit", "--timeout", "0s"}, exitUsage, "steward audit: --timeout: 0s must be positive"},
		{[]string{"audit", "extra"}, exitUsage, "steward audit: unexpected arguments: extra"},
		{[]string{"audit", "--config", invalidConfig, "--kubeconfig", missingKubeconfig}, exitConfig, "steward audit: configuration " + invalidConfig + " is invalid: " + invalidField},
		{[]string{"audit", "--kubeconfig", missingKubeconfig}, exitCluster, "steward audit: --kubeconfig " + missingKubeconfig + ": stat "},
		{[]string{"audit", "--kubeconfig", unreachable}, exitCluster, "steward audit: cannot reach the API server at https://127.0.0.1:"},
		{[]string{"audit", "--kubeconfig", refused}, exitCluster, "steward audit: the API server at " + unauthorized.URL + " refused the credentials"},

		{[]string{"manifests", "--dri", "x"}, exitUsage, "steward manifests: flag provided but not defined: --dri"},
		{[]string{"manifests", "extra"}, exitUsage, "steward manifests: unexpected arguments: extra"},
		{[]string{"manifests", "--namespace", "Steward"}, exitUsage, `steward manifests: --namespace "Steward": a lowercase RFC 1123 label`},
		{[]string{"manifests", "--dir", "-", "--overlay", "self-managed"}, exitUsage, `steward manifests: --overlay "self-managed": want one of cert-manager, self-managed-certs`},
		{[]string{"manifests", "--dir", t.TempDir(), "--overlay", "cert-manager"}, exitUsage, "steward manifests: --overlay applies to --dir - only"},
		{[]string{"manifests", "--dir", "-", "--chart-dir", "-"}, exitUsage, "steward manifests: --chart-dir -: the chart is written as files only"},
		{[]string{"manifests", "--dir", "-", "--config", invalidConfig}, exitConfig, "steward manifests: --config: configuration " + invalidConfig + " is invalid: " + invalidField},

		{[]string{"check"}, exitUsage, "steward check: no PATH given (use - for standard input)"},
		{[]string{"check", "--flux-version", "2.x", "."}, exitUsage, `steward check: --flux-version "2.x": not a Flux release`},
		{[]string{"check", "--config", invalidConfig, "."}, exitConfig, "steward check: configuration " + invalidConfig + " is invalid: " + invalidField},
		{[]string{"check", "--config", "testdata/config/flux-version-unknown.yaml", "."}, exitConfig, `steward check: configuration testdata/config/flux-version-unknown.yaml is invalid: rules.apimigration.fluxVersion: Invalid value: "9.0": newer than ` + apimigration.NewestRelease().String() + ", the newest Flux release Steward knows (it knows 2.6, "},
		{[]string{"serve", "--config", "testdata/config/flux-version-unknown.yaml"}, exitConfig, `steward serve: configuration testdata/config/flux-version-unknown.yaml is invalid: rules.apimigration.fluxVersion: Invalid value: "9.0": newer than `},
		{[]string{"check", "testdata/check/malformed"}, exitConfig, "steward check: testdata/check/malformed/"},
		{[]string{"check", "--flux-version", "2.8", "testdata/check/kustomize-build.yaml"}, exitFailed, ""},

		{[]string{"version", "extra"}, exitUsage, "steward version: unexpected arguments: extra"},
		{[]string{"completion", "powershell"}, exitUsage, `steward completion: name one shell: bash, zsh or fish (got ["powershell"])`},
	}
	for _, tc := range tests {
		line := strings.Join(tc.args, " ")
		t.Run(line, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			first, rest, _ := strings.Cut(stderr.String(), "\n")
			if code != tc.code || !strings.HasPrefix(first, tc.first) {
				t.Fatalf("steward %s: exit %d, stderr starting %q; want exit %d, stderr starting %q\nstderr:\n%s", line, code, first, tc.code, tc.first, stderr.String())
			}
			if code == exitUsage && len(tc.args) > 0 {
				hint := "Run 'steward --help' for usage.\n"
				if _, ok := lookupCommand(tc.args[0]); ok {
					hint = "Run 'steward " + tc.args[0] + " --help' for usage.\n"
				}
				if !strings.HasSuffix(rest, hint) || strings.Contains(stderr.String(), "Flags:") || stdout.Len() > 0 {
					t.Errorf("steward %s: want the error, then %q, and nothing else; stderr:\n%s\nstdout:\n%s", line, hint, stderr.String(), stdout.String())
				}
			}
		})
	}
}

func TestBadCommandLinesAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"serve-all"}, {"help", "serve-all"}, {"completion"}, {"completion", "powershell"}, {"completion", "bash", "zsh"}, {"version", "extra"}, {"manifests", "extra"}, {"audit", "extra"}, {"audit", "-o", "yaml"}, {"audit", "--timeout", "0s"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 || stderr.Len() == 0 {
			t.Errorf("steward %s: exit %d, stderr %q; want 2 with a message", strings.Join(args, " "), code, stderr.String())
		}
	}
}

// completionScript writes `steward completion shell` to a file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"completion", shell}, &stdout, &stderr); code != 0 {
		t.Fatalf("steward completion %s exited %d: %s", shell, code, stderr.String())
	}
	path := filepath.Join(t.TempDir(), "steward."+shell)
	if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCompletionScriptsNameEveryCommandAndFlag(t *testing.T) {
	for _, shell := range completionShellNames() {
		data, err := os.ReadFile(completionScript(t, shell))
		if err != nil {
			t.Fatal(err)
		}
		script := string(data)
		for _, c := range commands() {
			names := flagNames(c)
			if shell == "fish" { // fish names long flags without their dashes: -l name
				for i, n := range names {
					names[i] = "-l " + strings.TrimPrefix(n, "--")
				}
			}
			for _, want := range append(names, c.name) {
				if !strings.Contains(script, want) {
					t.Errorf("the %s script lacks %q of steward %s", shell, want, c.name)
				}
			}
		}
	}
}

// bashCompletions runs the bash script's completion function on a command
// line whose last word is being completed.
func bashCompletions(t *testing.T, script string, words ...string) []string {
	t.Helper()
	line := "steward " + strings.Join(words, " ")
	prog := `source "$1"; read -ra COMP_WORDS <<< "$2"; COMP_CWORD=$3; [[ $2 == *" " ]] && COMP_WORDS+=(""); _steward; printf '%s\n' "${COMPREPLY[@]}"`
	out, err := exec.Command("bash", "-c", prog, "bash", script, line, strconv.Itoa(len(words))).CombinedOutput()
	if err != nil {
		t.Fatalf("bash completion of %q: %v\n%s", line, err, out)
	}
	got := strings.Fields(string(out))
	if len(got) == 0 {
		return nil
	}
	slices.Sort(got)
	return got
}

func TestBashCompletionCompletes(t *testing.T) {
	script := completionScript(t, "bash")
	tests := map[string]struct {
		words []string
		want  []string
	}{
		"CommandsByPrefix":   {words: []string{"c"}, want: []string{"check", "completion"}},
		"FlagsOfServe":       {words: []string{"serve", "--cert-m"}, want: []string{"--cert-mode"}},
		"FlagsAfterOthers":   {words: []string{"serve", "--port=9443", "--metrics-"}, want: []string{"--metrics-bind-address", "--metrics-secure"}},
		"FlagsOfCheckOnly":   {words: []string{"check", "--f"}, want: []string{"--fail-on-deprecated", "--flux-version"}},
		"ShellsOfCompletion": {words: []string{"completion", ""}, want: []string{"bash", "fish", "zsh"}},
		"CommandsOfHelp":     {words: []string{"help", "ma"}, want: []string{"manifests"}},
		"VersionHasNoFlags":  {words: []string{"version", "--"}, want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, bashCompletions(t, script, tc.words...)); diff != "" {
				t.Errorf("completing steward %s (-want +got):\n%s", strings.Join(tc.words, " "), diff)
			}
		})
	}
}

// The zsh and fish scripts are checked by the shells themselves where they
// are installed (.ci/run installs them); fish also completes a command line.
func TestZshCompletionLoads(t *testing.T) {
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Skip("zsh is not installed")
	}
	script := completionScript(t, "zsh")
	out, err := exec.Command("zsh", "-c", `autoload -Uz compinit && compinit -u -d "$2" && source "$1" && whence -w _steward && [[ $_comps[steward] == _steward ]]`, "zsh", script, filepath.Join(t.TempDir(), "zcompdump")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "_steward: function") {
		t.Errorf("zsh did not load the script: %v\n%s", err, out)
	}
}

func TestFishCompletionCompletes(t *testing.T) {
	if _, err := exec.LookPath("fish"); err != nil {
		t.Skip("fish is not installed")
	}
	script := completionScript(t, "fish")
	for line, want := range map[string][]string{
		"steward serve --cert-m": {"--cert-mode"},
		"steward completion ":    {"bash", "fish", "zsh"},
		"steward ch":             {"check"},
	} {
		out, err := exec.Command("fish", "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, script, line).CombinedOutput()
		if err != nil {
			t.Fatalf("fish completing %q: %v\n%s", line, err, out)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if word, _, _ := strings.Cut(l, "\t"); word != "" {
				got = append(got, word)
			}
		}
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("fish completing %q (-want +got):\n%s", line, diff)
		}
	}
}

func TestManifestsRendersForTheGivenConfiguration(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules:\n  installplanguard:\n    mode: off\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules:\n  installplanguard:\n    mode: block\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"manifests", "--config", bad, "--dir", filepath.Join(dir, "bad")}, &stdout, &stderr); code != exitConfig || !strings.Contains(stderr.String(), "rules.installplanguard.mode") {
		t.Errorf("an invalid configuration: exit %d, stderr %q; want 3 naming rules.installplanguard.mode", code, stderr.String())
	}
	out := filepath.Join(dir, "install")
	if code := run([]string{"manifests", "--config", good, "--dir", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("steward manifests --config: exit %d: %s", code, stderr.String())
	}
	webhooks, err := os.ReadFile(filepath.Join(out, "base", "webhooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(webhooks), "installplanguard") || !strings.Contains(string(webhooks), "fleetguard.steward.dev") {
		t.Errorf("rendered with installplanguard off, the webhook configurations are:\n%s", webhooks)
	}
}

// TestCheckExitCodesAreTheTables keeps the check package's exit codes,
// which steward check returns as they are, the table's.
func TestCheckExitCodesAreTheTables(t *testing.T) {
	for _, c := range []struct{ check, table int }{
		{check.ExitOK, exitOK}, {check.ExitFindings, exitFailed}, {check.ExitUsage, exitUsage}, {check.ExitBadInput, exitConfig},
	} {
		if c.check != c.table {
			t.Errorf("check's exit code %d stands for the table's %d", c.check, c.table)
		}
	}
}

// TestManifestsDirDashPrintsTheInstall: --dir - writes no files and prints
// the overlay's objects as one YAML stream, each document headed by its
// source file, for kubectl apply -f -; what was written goes nowhere else.
func TestManifestsDirDashPrintsTheInstall(t *testing.T) {
	config, err := filepath.Abs("testdata/config/installplanguard-off.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	for overlay, want := range map[string][]string{
		"":                   {"kind: Certificate", "cert-manager.io/inject-ca-from: steward-system/steward-serving-cert", "# Source: overlays/cert-manager/certificates.yaml"},
		"self-managed-certs": {"--cert-mode=self-managed", "# Source: overlays/self-managed-certs/secret.yaml"},
	} {
		t.Run("overlay="+overlay, func(t *testing.T) {
			args := []string{"manifests", "--config", config, "--dir", "-"}
			if overlay != "" {
				args = append(args, "--overlay", overlay)
			}
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != exitOK || stderr.Len() > 0 {
				t.Fatalf("steward %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr.String())
			}
			out := stdout.String()
			if !strings.HasPrefix(out, "---\n# Source: base/namespace.yaml\napiVersion: v1\nkind: Namespace\n") {
				t.Errorf("the stream does not start with the Namespace, headed by its source:\n%.300s", out)
			}
			docs := strings.Split(out, "---\n")[1:]
			for i, doc := range docs {
				if !strings.HasPrefix(doc, "# Source: ") {
					t.Errorf("document %d has no # Source: comment:\n%.200s", i, doc)
				}
			}
			if last := docs[len(docs)-1]; !strings.Contains(last, "kind: ValidatingWebhookConfiguration") {
				t.Errorf("the webhook configurations are not last; the last document is:\n%.300s", last)
			}
			for _, w := range append(want, "kind: Deployment", "kind: MutatingWebhookConfiguration") {
				if !strings.Contains(out, w) {
					t.Errorf("the stream lacks %q", w)
				}
			}
			if strings.Contains(out, "installplanguard.steward.dev") {
				t.Error("installplanguard is off in the configuration, yet the stream registers it")
			}
			if entries, _ := os.ReadDir("."); len(entries) > 0 {
				t.Errorf("--dir - wrote files: %v", entries)
			}
		})
	}
}
