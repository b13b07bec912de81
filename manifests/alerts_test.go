package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

// promtool is Prometheus' own rule checker, built by `make promtool` (and
// so by `make test`) into the tool cache, which exports its path.
func promtool(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PROMTOOL")
	if path == "" {
		t.Skip("PROMTOOL is not set: run through make, which builds promtool")
	}
	return path
}

// writeRuleFile writes the rendered PrometheusRule's groups as a Prometheus
// rule file, the form promtool reads.
func writeRuleFile(t *testing.T, path string, withAnnotations bool) {
	t.Helper()
	files, err := Render(Options{})
	if err != nil {
		t.Fatal(err)
	}
	var rule monitoringv1.PrometheusRule
	if err := yaml.Unmarshal(files["monitoring/prometheusrule.yaml"], &rule); err != nil {
		t.Fatal(err)
	}
	groups := rule.Spec.Groups
	if !withAnnotations {
		// promtool compares annotations too; the tests are about when an
		// alert fires, and `check rules` covers the templates.
		for g := range groups {
			for r := range groups[g].Rules {
				groups[g].Rules[r].Annotations = nil
			}
		}
	}
	data, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestAlertingRulesPassPromtoolCheck(t *testing.T) {
	dir := t.TempDir()
	writeRuleFile(t, filepath.Join(dir, "rules.yaml"), true)
	runPromtool(t, dir, "check", "rules", "--lint=all", "--lint-fatal", "rules.yaml")
}

// TestAlertsFireWhenTheyShould runs the promtool unit tests in
// testdata/alerts.test.yaml against the rendered rules.
func TestAlertsFireWhenTheyShould(t *testing.T) {
	dir := t.TempDir()
	writeRuleFile(t, filepath.Join(dir, "rules.yaml"), false)
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, dir, "test", "rules", "alerts.test.yaml")
}

// TestEveryAlertHasAUnitTest keeps a new alert from shipping untested.
func TestEveryAlertHasAUnitTest(t *testing.T) {
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range (install{ns: DefaultNamespace, name: Name}).alerts() {
		if !strings.Contains(string(tests), "alertname: "+a.Name+"\n") {
			t.Errorf("alert %s has no case in testdata/alerts.test.yaml", a.Name)
		}
	}
}
