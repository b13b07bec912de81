package config_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
)

// FuzzParse feeds arbitrary documents to the configuration parser,
// which runs once at start-up on a file an operator wrote. Whatever the
// input, parsing must not panic; an accepted configuration must be valid,
// must build every rule (rendering their Specs without panicking), and must
// survive a round trip: written back out and parsed again, it is the same
// configuration, so what `steward serve` runs is what the file says.
func FuzzParse(f *testing.F) {
	header := "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\n"
	for _, seed := range []string{
		header,
		header + "exemptUsers: [ci-bot]\nexemptGroups: [platform]\nbreakGlassGroup: ops:break-glass\n",
		header + "rules:\n  fleetguard:\n    mode: warn\n    agentUsers: [system:serviceaccount:fleet:agent]\n    ignoredFields:\n    - group: apps\n      kind: Deployment\n      paths: [/spec/replicas]\n",
		header + "rules:\n  fleetguard:\n    ignoredFields:\n    - {group: '', kind: ConfigMap, paths: ['/data/a~1b', '/data/~0x']}\n",
		header + "rules:\n  apimigration:\n    mode: audit\n",
		header + "rules:\n  claimguard:\n    mode: enforce\n  installplanguard:\n    mode: warn\n",
		header + "rules:\n  fleetguard:\n    mode: block\n",
		header + "rules:\n  fleetguard:\n    ignoredFields:\n    - {group: apps, kind: Deployment, paths: ['spec/replicas', '']}\n",
		header + "breakGlasGroup: typo\n",
		header + "rules: {unknownrule: {mode: enforce}}\n",
		"apiVersion: v1\nkind: ConfigMap\n",
		"{\"apiVersion\":\"config.steward.dev/v1alpha1\",\"kind\":\"StewardConfiguration\",\"rules\":{\"fleetguard\":{\"mode\":\"warn\"}}}",
		"",
		"---\n",
		"apiVersion: [",
		"&a [*a, *a]",
		header + "exemptUsers: &x [a, b]\nexemptGroups: *x\n",
		header + "exemptUsers: ~\nrules: ~\n",
		header + "exemptUsers: [1, true, 2.5e10]\n",
		header + "breakGlassGroup: \"\\u0000\\u2028\"\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data, "fuzz.yaml", webhooks.Sections())
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if errs := c.Validate(webhooks.Sections()); len(errs) > 0 {
			t.Fatalf("accepted configuration does not validate: %v", errs.ToAggregate())
		}
		if c.BreakGlassGroup == "" {
			t.Fatal("accepted configuration has no break-glass group after defaulting")
		}
		for _, r := range webhooks.Rules(c) {
			spec := r.Rule.Spec()
			if spec.Name == "" || len(spec.Webhooks) == 0 {
				t.Fatalf("rule built from an accepted configuration has no name or webhooks: %+v", spec)
			}
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("writing the accepted configuration back out: %v", err)
		}
		again, err := config.Parse(out, "roundtrip.yaml", webhooks.Sections())
		if err != nil {
			t.Fatalf("accepted configuration does not parse after a round trip: %v\n%s", err, out)
		}
		if diff := cmp.Diff(c, again); diff != "" {
			t.Fatalf("configuration changed in a round trip (-parsed +reparsed):\n%s", diff)
		}
	})
}
