package check

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/stewardhq/steward/webhooks/apimigration"
)

// TestCheckSARIFValidates holds the sarif output format to the OASIS
// SARIF 2.1.0 schema (testdata/sarif-schema-2.1.0.json, see its .SOURCE
// note), for findings of every kind and for every kind of input problem:
// a document with a location and line, a file without a line, stdin.
func TestCheckSARIFValidates(t *testing.T) {
	f, err := os.Open("testdata/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // uri and uri-reference are checked too
	if err := c.AddResource("sarif-schema-2.1.0.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	in := func(p string) string { return filepath.Join(fixtures, p) }
	cases := map[string]struct {
		opts  Options
		paths []string
	}{
		"findings of every kind and malformed input": {Options{Target: apimigration.MustParseRelease("2.8")}, []string{in("list.yaml"), in("unknown.yaml"), in("malformed"), in("does-not-exist.yaml"), "-"}},
		"nothing found":      {Options{}, []string{in("current.yaml")}},
		"fail on deprecated": {Options{FailOnDeprecated: true, Target: apimigration.MustParseRelease("2.6")}, []string{in("repo")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			opts := tc.opts
			opts.Format = "sarif"
			opts.Stdin = strings.NewReader("apiVersion: helm.toolkit.fluxcd.io/v2beta2\nkind: HelmRelease\nmetadata: {name: x}\n---\n[\n")
			var stdout, stderr bytes.Buffer
			if _, err := Run(opts, tc.paths, &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(stdout.Bytes()))
			if err != nil {
				t.Fatalf("not JSON: %v\n%s", err, stdout.String())
			}
			if err := schema.Validate(inst); err != nil {
				t.Errorf("not SARIF 2.1.0: %v", err)
			}
			checkSARIFRuleRefs(t, stdout.Bytes())
		})
	}
}

// checkSARIFRuleRefs holds what the schema cannot: every result's ruleId
// and ruleIndex name the same rule of the driver.
func checkSARIFRuleRefs(t *testing.T, out []byte) {
	t.Helper()
	var log sarifLog
	if err := json.Unmarshal(out, &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	for _, r := range run.Results {
		if r.RuleIndex >= len(run.Tool.Driver.Rules) || run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID {
			t.Errorf("result %q: ruleIndex %d does not name rule %s", r.Message.Text, r.RuleIndex, r.RuleID)
		}
	}
}
