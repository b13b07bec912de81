package e2e

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestChartWithEveryValueAppliesOnTheServer renders the chart with every
// value an install can adapt it with (manifests/testdata/chart-values-all.yaml,
// the file the chart's own tests lint and render), the monitoring objects
// and the PolicyReport CRDs turned on, in both certificate modes, and
// applies every rendered object with a server-side dry run and strict field
// validation: the API server, with cert-manager's and the Prometheus
// Operator's own CRDs installed, accepts each of them as a cluster would,
// webhook configurations (their matchConditions compiled) included.
// helm lint and template check only the chart's own schema; this checks
// the objects against the API server's.
func TestChartWithEveryValueAppliesOnTheServer(t *testing.T) {
	helm := helmBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	upstream := filepath.Join(root, "e2e", "upstream")
	crds, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(upstream, "cert-manager", "1.21"), filepath.Join(upstream, "prometheus-operator")},
		ErrorIfPathMissing: true,
	})
	if err != nil || len(crds) != 4 {
		t.Fatalf("installing cert-manager's and the Prometheus Operator's CRDs: %d installed, %v", len(crds), err)
	}

	const ns = "steward-values-all"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, mode := range []string{"cert-manager", "self-managed"} {
		t.Run(mode, func(t *testing.T) {
			rendered := helmTemplate(ctx, t, helm, "platform",
				"--namespace", ns,
				"--values", filepath.Join(root, "manifests", "testdata", "chart-values-all.yaml"),
				"--set", "certificates.mode="+mode,
				"--set", "monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true",
				"--set", "policyReportCRDs.install=true")
			objs, err := harness.ParseObjects("helm template", rendered)
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]bool{}
			for _, u := range objs {
				kinds[u.GetKind()] = true
			}
			want := []string{"Deployment", "Service", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
				"NetworkPolicy", "ServiceMonitor", "PrometheusRule", "CustomResourceDefinition", "PodDisruptionBudget"}
			if mode == "cert-manager" {
				want = append(want, "Issuer", "Certificate")
			}
			for _, k := range want {
				if !kinds[k] {
					t.Errorf("the chart renders no %s with every value set (kinds %v)", k, slices.Sorted(maps.Keys(kinds)))
				}
			}
			out, errOut, err := env.Kubectl(ctx, string(rendered), "apply", "--dry-run=server", "--server-side", "--force-conflicts",
				"--validate=strict", "--field-manager=helm", "-f", "-")
			if err != nil {
				t.Fatalf("the API server refuses a rendered object: %v\n%s%s", err, out, errOut)
			}
			if applied := strings.Count(out, "(server dry run)"); applied != len(objs) {
				t.Errorf("the dry run applied %d of %d objects:\n%s", applied, len(objs), out)
			}
		})
	}
}
