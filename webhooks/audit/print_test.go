package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/webhooks/rule"
)

func auditPassFixture() Pass {
	return Pass{
		{Rule: "installplanguard", Findings: []rule.Finding{{
			Check: "installplan-missing", Result: rule.AuditFail,
			Object:     corev1.ObjectReference{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Namespace: "operators", Name: "etcd"},
			Message:    "Subscription operators/etcd is InstallPlanMissing",
			Properties: map[string]string{"installPlan": "operators/install-abc"},
		}}},
		{Rule: "suspendnotice", Findings: []rule.Finding{
			{Check: "suspended", Result: rule.AuditWarn,
				Object:     corev1.ObjectReference{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: "apps", Name: "web"},
				Message:    "Kustomization apps/web is suspended",
				Properties: map[string]string{"suspendedBy": "alice", "suspendedAt": "2026-01-01T00:00:00Z"}},
			{Check: "suspended", Result: rule.AuditWarn,
				Object:  corev1.ObjectReference{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: "apps", Name: "api"},
				Message: "Kustomization apps/api is suspended"},
		}},
	}
}

func TestAuditTextGroupsByNamespaceThenRule(t *testing.T) {
	pass := auditPassFixture()
	var out bytes.Buffer
	if err := WriteText(&out, pass, Results(pass.Answered(), time.Time{})); err != nil {
		t.Fatal(err)
	}
	want := `namespace apps:
  suspendnotice:
    warn  suspended  Kustomization api: Kustomization apps/api is suspended
    warn  suspended  Kustomization web: Kustomization apps/web is suspended (suspendedAt=2026-01-01T00:00:00Z, suspendedBy=alice)
namespace operators:
  installplanguard:
    fail  installplan-missing  Subscription etcd: Subscription operators/etcd is InstallPlanMissing (installPlan=operators/install-abc)

3 findings: 1 fail, 2 warn, 0 pass (rules asked: installplanguard, suspendnotice)
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("steward audit -o text (-want +got):\n%s", diff)
	}
}

func TestAuditJSONIsStableAndFailuresFirst(t *testing.T) {
	const exitFailed = 1 // steward audit's exit code when a finding fails
	pass := auditPassFixture()
	var a, b bytes.Buffer
	results := Results(pass.Answered(), time.Time{})
	if err := WriteJSON(&a, pass, results, exitFailed); err != nil {
		t.Fatal(err)
	}
	// The same findings answered in another order print the same bytes.
	reversed := Pass{pass[1], pass[0]}
	reversed[0].Findings = []rule.Finding{pass[1].Findings[1], pass[1].Findings[0]}
	if err := WriteJSON(&b, Pass{pass[0], reversed[0]}, Results(reversed.Answered(), time.Time{}), exitFailed); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a.String(), b.String()); diff != "" {
		t.Errorf("steward audit -o json must not depend on the order findings come in (-first +second):\n%s", diff)
	}
	var got jsonReport
	if err := json.Unmarshal(a.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, f := range got.Findings {
		order = append(order, f.Result+" "+f.Resource.Name)
	}
	if diff := cmp.Diff([]string{"fail etcd", "warn api", "warn web"}, order); diff != "" {
		t.Errorf("findings in report order, failures first (-want +got):\n%s", diff)
	}
	if got.Summary != (jsonSummary{Fail: 1, Warn: 2, ExitCode: exitFailed}) {
		t.Errorf("summary = %+v", got.Summary)
	}
}

// TestAuditPrintsEitherReportAPI: -o policyreport and -o openreports print
// the reports the background audit writes, one per namespace, of the
// API's kinds, with the same results.
func TestAuditPrintsEitherReportAPI(t *testing.T) {
	pass := auditPassFixture()
	results := Results(pass.Answered(), time.Time{})
	kinds := map[string][]string{}
	resultsOf := map[string][]any{}
	for _, api := range []ReportAPI{PolicyReportAPI(), OpenReportsAPI()} {
		var out bytes.Buffer
		if err := WriteReports(&out, api, results); err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(strings.TrimPrefix(out.String(), "---\n"), "---\n") {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("%s: %v in:\n%s", api.Name, err, doc)
			}
			meta, _ := obj["metadata"].(map[string]any)
			kinds[api.Name] = append(kinds[api.Name], fmt.Sprintf("%s %s %s/%s", obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"]))
			resultsOf[api.Name] = append(resultsOf[api.Name], obj["results"])
		}
	}
	want := map[string][]string{
		"wgpolicyk8s.io/v1alpha2": {"wgpolicyk8s.io/v1alpha2 PolicyReport apps/steward", "wgpolicyk8s.io/v1alpha2 PolicyReport operators/steward"},
		"openreports.io/v1alpha1": {"openreports.io/v1alpha1 Report apps/steward", "openreports.io/v1alpha1 Report operators/steward"},
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("reports printed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(resultsOf["wgpolicyk8s.io/v1alpha2"], resultsOf["openreports.io/v1alpha1"]); diff != "" {
		t.Errorf("the two APIs' results differ (-PolicyReport +Report):\n%s", diff)
	}
}
