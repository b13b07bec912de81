package e2e

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestMonitoringManifests installs manifests/monitoring as a user would, on
// the Prometheus Operator's own CRDs (e2e/upstream), and checks that every
// metric its alerts and dashboard query is one Steward or the API server
// really exports, with the serving certificate's expiry and the build info
// as Steward reports them.
func TestMonitoringManifests(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}

	crds, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "e2e", "upstream", "prometheus-operator")}, ErrorIfPathMissing: true})
	if err != nil || len(crds) != 2 {
		t.Fatalf("installing the Prometheus Operator's CRDs: %d installed, %v", len(crds), err)
	}
	monitoring := filepath.Join(root, "manifests", "monitoring")
	// Strict field validation: a field the upstream schema does not know
	// is an error, not silently pruned.
	if out, _, err := env.Kubectl(ctx, "", "apply", "--server-side", "--validate=strict", "-k", monitoring); err != nil {
		t.Fatalf("kubectl apply -k manifests/monitoring: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _, _ = env.Kubectl(context.Background(), "", "delete", "--ignore-not-found", "-k", monitoring)
	})

	// Steward runs as the Deployment does, keeping its registration, so
	// the registration's metric is exported too.
	if _, err := env.RestartStewardWith(ctx, harness.StewardOptions{Config: harness.DefaultConfig, ProvideCerts: true, KeepRegistration: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := env.RestartSteward(context.Background(), harness.DefaultConfig); err != nil {
			t.Errorf("restoring the default Steward: %v", err)
		}
	})

	// One refusal, so the decision and the API server's rejection metrics
	// have samples.
	jane, err := env.As("jane", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	meta := fleetMeta("monitoring-probe")
	meta.Namespace = testNamespace(t, ctx, "monitoring")
	if err := jane.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta}); err == nil || !strings.Contains(err.Error(), fleetguardHook) {
		t.Fatalf("creating a ConfigMap with Fleet's keys: %v; want fleetguard's denial", err)
	}

	text, err := env.Steward.MetricsText()
	if err != nil {
		t.Fatal(err)
	}
	steward, err := harness.ParseMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	apiserver, err := env.APIServerMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	queried := queriedMetrics(t, filepath.Join(monitoring, "prometheusrule.yaml"), filepath.Join(monitoring, "dashboard.yaml"))
	if len(queried) < 10 {
		t.Fatalf("found only %d metric names in the alerts and dashboard: %v", len(queried), queried)
	}
	for _, name := range queried {
		exporter := steward
		if strings.HasPrefix(name, "apiserver_") {
			exporter = apiserver
		}
		if name == "apiserver_admission_webhook_fail_open_count" {
			// Counted only once a fail-open webhook could not be called,
			// which no test provokes on purpose; promtool's tests cover
			// the alert's labels.
			continue
		}
		if _, ok := family(exporter, name); !ok {
			t.Errorf("the monitoring manifests query %s, which is not exported", name)
		}
	}

	// The expiry Steward reports is that of the certificate it serves.
	conn, err := tls.Dial("tcp", strings.TrimPrefix(env.Steward.URL(""), "https://"), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reading the served certificate
	if err != nil {
		t.Fatal(err)
	}
	served := conn.ConnectionState().PeerCertificates[0].NotAfter
	_ = conn.Close()
	if got := harness.SumFamilies(steward, "steward_serving_certificate_expiry_timestamp_seconds", nil); int64(got) != served.Unix() {
		t.Errorf("steward_serving_certificate_expiry_timestamp_seconds = %v, want the served certificate's notAfter %d (%s)", got, served.Unix(), served)
	}
	info := steward["steward_build_info"].GetMetric()
	if len(info) != 1 || labelValue(info[0], "version") == "" || labelValue(info[0], "goversion") == "" {
		t.Errorf("steward_build_info = %v, want one sample labelled with the version and Go version", info)
	}
}

// metricName matches a metric name the monitoring manifests query: every
// query selects its series with a label matcher.
var metricName = regexp.MustCompile(`\b((?:steward|controller_runtime|apiserver|process)_[a-z_]+)\{`)

func queriedMetrics(t *testing.T, files ...string) []string {
	t.Helper()
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metricName.FindAllStringSubmatch(string(data), -1) {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// family finds a queried name's family: a histogram's series are named
// after it with _bucket, _sum and _count.
func family(families map[string]*dto.MetricFamily, name string) (*dto.MetricFamily, bool) {
	if f, ok := families[name]; ok {
		return f, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := families[base]; ok && f.GetType() == dto.MetricType_HISTOGRAM {
				return f, true
			}
		}
	}
	return nil, false
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
