package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	if code := run([]string{"manifests", "--config", bad, "--dir", filepath.Join(dir, "bad")}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "rules.installplanguard.mode") {
		t.Errorf("an invalid configuration: exit %d, stderr %q; want 2 naming rules.installplanguard.mode", code, stderr.String())
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
