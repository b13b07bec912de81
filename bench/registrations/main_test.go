package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestRunMeasuresTheRenderedConfigurations runs the tool on Steward's
// rendered configurations with a few writes: every write is decided by
// the API server's code without calling Steward, and the table has a row
// for each write.
func TestRunMeasuresTheRenderedConfigurations(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-rounds", "1", "-writes", "10"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, w := range writeKinds() {
		if !strings.Contains(out.String(), "| "+w.name+" |") {
			t.Errorf("no row for %q in:\n%s", w.name, out.String())
		}
	}
}

// TestRunFailsWhenAWriteWouldCallSteward: an entry whose match conditions
// let an unmarked write through is reported, not timed.
func TestRunFailsWhenAWriteWouldCallSteward(t *testing.T) {
	data, err := os.ReadFile("../../manifests/base/webhooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// argocdguard's people entry, its tracking-id test made always true.
	broken := strings.Replace(string(data), `(object != null && has(object.metadata) && has(object.metadata.annotations) && "argocd.argoproj.io/tracking-id" in object.metadata.annotations)`, `true`, 1)
	if broken == string(data) {
		t.Fatal("the tracking-id test is not in the rendered configuration")
	}
	path := t.TempDir() + "/webhooks.yaml"
	if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	err = run([]string{"-manifest", path, "-rounds", "1", "-writes", "10"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "argocdguard.steward.dev would call Steward") {
		t.Fatalf("got %v, want argocdguard.steward.dev reported", err)
	}
}

func TestRunRefusesConfigurationsItCannotCompare(t *testing.T) {
	const entry = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: x\n"
	for name, tc := range map[string]struct{ content, want string }{
		"no entries":     {"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", "no webhook configuration entries"},
		"no argocdguard": {entry + "webhooks:\n- name: a.example.com\n", "no argocdguard object entries"},
		"unknown field":  {entry + "webhook: []\n", `unknown field "webhook"`},
	} {
		t.Run(name, func(t *testing.T) {
			path := t.TempDir() + "/webhooks.yaml"
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := run([]string{"-manifest", path}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestAlsoTimesAFourthConfiguration: -also adds a column for
// configurations rendered another way; with argocdguard's two entries
// narrowed by an objectSelector, as the chart renders them with
// docs/examples/argocd-annotation-label-values.yaml, no entry's match
// conditions run for an unlabelled write.
func TestAlsoTimesAFourthConfiguration(t *testing.T) {
	data, err := os.ReadFile("../../manifests/base/webhooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	selected := string(data)
	for _, name := range argoCDObjectEntries {
		const empty = "  objectSelector: {}\n"
		i := strings.Index(selected, "  name: "+name+"\n")
		j := strings.Index(selected[max(i, 0):], empty)
		if i < 0 || j < 0 {
			t.Fatalf("no empty objectSelector after %s in the rendered configuration", name)
		}
		selected = selected[:i+j] + "  objectSelector:\n    matchExpressions:\n    - {key: app.kubernetes.io/instance, operator: Exists}\n" + selected[i+j+len(empty):]
	}
	path := t.TempDir() + "/selected.yaml"
	if err := os.WriteFile(path, []byte(selected), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{"-also", path, "-rounds", "1", "-writes", "10"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| Steward's, as selected.yaml has them |") {
		t.Errorf("no column for the -also file in:\n%s", out.String())
	}
	for _, w := range writeKinds() {
		if !strings.Contains(out.String(), "| "+w.name+" |") || !strings.Contains(out.String(), "2 of 24, 0 of 22, 0 of 24 |") {
			t.Errorf("for %q, want the match conditions of 2 of Steward's 24 entries to run and none of the -also file's:\n%s", w.name, out.String())
		}
	}
}
