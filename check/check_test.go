package check

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stewardhq/steward/webhooks/apimigration"
)

// fixtures is the YAML the golden test of `steward check`
// (cmd/steward/check_test.go) runs over, and whose paths its transcripts
// name; the tests here read it too.
const fixtures = "../cmd/steward/testdata/check"

func TestRunReadsStdinAndPicksTheExitCode(t *testing.T) {
	const helmRelease = "apiVersion: helm.toolkit.fluxcd.io/v2beta2\nkind: HelmRelease\nmetadata:\n  name: podinfo\n  namespace: apps\n"
	tests := map[string]struct {
		opts   Options
		stdin  string
		want   int
		stdout string
	}{
		"RemovedAtTheNewestByDefault": {Options{}, helmRelease, ExitFindings, "<stdin>:1: error: HelmRelease apps/podinfo (document 1): "},
		"DeprecatedIsAWarning":        {Options{Target: apimigration.MustParseRelease("2.6")}, helmRelease, ExitOK, "<stdin>:1: warning: HelmRelease apps/podinfo (document 1): "},
		"DeprecatedCanFail":           {Options{Target: apimigration.MustParseRelease("2.6"), FailOnDeprecated: true}, helmRelease, ExitFindings, "<stdin>:1: error: "},
		"MalformedInput":              {Options{}, "[\n", ExitBadInput, "steward check: 0 objects in 1 file: "},
		"JSON":                        {Options{Format: "json"}, helmRelease, ExitFindings, "{\n  \"target\": \"" + apimigration.NewestRelease().String() + "\",\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.opts.Stdin = strings.NewReader(tc.stdin)
			var stdout, stderr bytes.Buffer
			code, err := Run(tc.opts, []string{"-"}, &stdout, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.want || !strings.HasPrefix(stdout.String(), tc.stdout) {
				t.Errorf("exit %d, stdout:\n%s\nwant exit %d, stdout starting %q (stderr: %s)", code, stdout.String(), tc.want, tc.stdout, stderr.String())
			}
		})
	}
}

func TestRunRefusesInvalidOptions(t *testing.T) {
	for name, opts := range map[string]Options{
		"UnknownFormat": {Format: "xml"},
		"BadGlob":       {Exclude: []string{"["}},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code, err := Run(opts, []string{fixtures}, &stdout, &stderr)
			if code != ExitUsage || err == nil || stdout.Len()+stderr.Len() > 0 {
				t.Errorf("exit %d, error %v, output %q %q; want exit %d with an error and nothing checked", code, err, stdout.String(), stderr.String(), ExitUsage)
			}
		})
	}
}

func TestParseTargetRefusesReleasesNewerThanTheTable(t *testing.T) {
	newest := apimigration.NewestRelease()
	next := apimigration.Release{Major: newest.Major, Minor: newest.Minor + 1}
	var releases []string
	for _, r := range apimigration.Releases() {
		releases = append(releases, r.String())
	}
	known := strings.Join(releases, ", ")
	for in, want := range map[string]string{
		newest.String():                     "",
		"v" + newest.String() + ".3":        "",
		"2.6":                               "",
		next.String():                       "newer than " + newest.String() + ", the newest Flux release Steward knows (it knows " + known + "; an older release is read as 2.6): upgrade Steward to check against " + next.String(),
		"v" + next.String() + ".0":          "newer than " + newest.String(),
		fmt.Sprintf("%d.0", newest.Major+1): "newer than " + newest.String(),
		"2.x":                               "not a Flux release",
	} {
		r, err := ParseTarget(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("ParseTarget(%q): %v; want a release", in, err)
		case want == "" && !newest.AtLeast(r):
			t.Errorf("ParseTarget(%q) = %s, newer than %s", in, r, newest)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("ParseTarget(%q) = %s, %v; want an error containing %q", in, r, err, want)
		}
	}
}
