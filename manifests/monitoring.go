package manifests

import (
	"fmt"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The monitoring directory is opt-in (`kubectl apply -k manifests/monitoring`):
// it needs the Prometheus Operator's CRDs, which many clusters lack, and the
// base must install everywhere.

// monitoringFiles are the files of manifests/monitoring.
func (in install) monitoringFiles() map[string][]any {
	return map[string][]any{
		"monitoring/servicemonitor.yaml": {in.serviceMonitor()},
		"monitoring/prometheusrule.yaml": {in.prometheusRule()},
		"monitoring/dashboard.yaml":      {in.dashboardConfigMap()},
	}
}

// serviceMonitor scrapes /metrics over HTTPS with the Prometheus service
// account's token, which Steward reviews with the API server; Prometheus'
// service account needs the steward-metrics-reader ClusterRole. The metrics
// certificate is self-signed, as kube-controller-manager's is.
func (in install) serviceMonitor() *monitoringv1.ServiceMonitor {
	https := monitoringv1.SchemeHTTPS
	insecure := true
	return &monitoringv1.ServiceMonitor{
		TypeMeta:   metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "ServiceMonitor"},
		ObjectMeta: in.meta(in.name),
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector: metav1.LabelSelector{MatchLabels: in.selectorLabels()},
			Endpoints: []monitoringv1.Endpoint{{
				Port:            "metrics",
				Scheme:          &https,
				Interval:        "30s",
				BearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
				HTTPConfigWithProxyAndTLSFiles: monitoringv1.HTTPConfigWithProxyAndTLSFiles{HTTPConfigWithTLSFiles: monitoringv1.HTTPConfigWithTLSFiles{
					TLSConfig: &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{InsecureSkipVerify: &insecure}},
				}},
			}},
		},
	}
}

func (in install) prometheusRule() *monitoringv1.PrometheusRule {
	var rules []monitoringv1.Rule
	for _, a := range in.alerts() {
		d := promDuration(a.For)
		rules = append(rules, monitoringv1.Rule{
			Alert:       a.Name,
			Expr:        intstr.FromString(a.Expr),
			For:         &d,
			Labels:      map[string]string{"severity": a.Severity},
			Annotations: map[string]string{"summary": a.Summary, "description": a.Description, "runbook_url": runbookURL},
		})
	}
	return &monitoringv1.PrometheusRule{
		TypeMeta:   metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRule"},
		ObjectMeta: in.meta(in.name),
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: "steward", Rules: rules}}},
	}
}

// promDuration spells a whole number of minutes or hours the way
// Prometheus rule files do (5m, 1h).
func promDuration(d time.Duration) monitoringv1.Duration {
	if d%time.Hour == 0 {
		return monitoringv1.Duration(fmt.Sprintf("%dh", d/time.Hour))
	}
	return monitoringv1.Duration(fmt.Sprintf("%dm", d/time.Minute))
}

// runbookURL is the section of docs/reliability.md that says what to do
// when Steward is down or failing: take it off the write path, then repair
// it.
const runbookURL = "https://github.com/stewardhq/steward/blob/main/docs/reliability.md#recovery-runbook"

// dashboardConfigMap holds the Grafana dashboard; Grafana's dashboard
// sidecar (kube-prometheus-stack's default) loads ConfigMaps labelled
// grafana_dashboard=1.
func (in install) dashboardConfigMap() *corev1.ConfigMap {
	meta := in.meta(in.name + "-dashboard")
	meta.Labels["grafana_dashboard"] = "1"
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta,
		Data:       map[string]string{"steward.json": string(in.dashboardJSON())},
	}
}

// alert is one alerting rule, as plain data the tests can evaluate.
type alert struct {
	Name, Expr, Severity string
	For                  time.Duration
	Summary, Description string
}

// scoped is the label matcher that picks Steward's own series out of
// everything Prometheus scrapes: the ServiceMonitor's job is the Service's
// name, the install's.
func (in install) scoped() string {
	return fmt.Sprintf(`job=%q,namespace=%q`, in.name, in.ns)
}
