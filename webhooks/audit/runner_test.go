package audit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// fakeRule is a rule whose audit answers findings, or err.
type fakeRule struct {
	findings []rule.Finding
	err      error
	asked    int
}

func (f *fakeRule) Handle(context.Context, *rule.Request) admission.Response {
	return admission.Allowed("")
}
func (f *fakeRule) Spec() rule.Spec { return rule.Spec{} }
func (f *fakeRule) Audit(context.Context, client.Reader) ([]rule.Finding, error) {
	f.asked++
	return f.findings, f.err
}

func TestRunnerPass(t *testing.T) {
	suspend := &fakeRule{findings: []rule.Finding{finding("suspended", rule.AuditWarn, "apps", "web")}}
	olm := &fakeRule{findings: []rule.Finding{finding("installplan-missing", rule.AuditFail, "apps", "etcd")}}
	auditors := []Auditor{{Name: "suspendnotice", Auditor: suspend}, {Name: "installplanguard", Auditor: olm}}
	p, c := newFakePublisher()
	m := NewMetrics()
	r := NewRunner(func() ([]Auditor, time.Duration) { return auditors, time.Hour }, nil, p, m, logr.Discard())

	if !r.Pass(context.Background(), auditors) {
		t.Fatal("a pass where every rule answered and the reports were written must succeed")
	}
	var got []string
	for _, res := range resultsOf(report(t, c, "apps")) {
		got = append(got, res.Policy+"/"+res.Rule)
	}
	if strings.Join(got, ",") != "installplanguard/installplan-missing,suspendnotice/suspended" {
		t.Errorf("report results = %v, want the two audited rules' findings", got)
	}
	want := `
# HELP steward_audit_results Findings of the background audit by rule and verdict (pass, fail, warn), as each rule last answered.
# TYPE steward_audit_results gauge
steward_audit_results{result="fail",rule="installplanguard"} 1
steward_audit_results{result="pass",rule="installplanguard"} 0
steward_audit_results{result="warn",rule="installplanguard"} 0
steward_audit_results{result="fail",rule="suspendnotice"} 0
steward_audit_results{result="pass",rule="suspendnotice"} 0
steward_audit_results{result="warn",rule="suspendnotice"} 1
# HELP steward_audit_reports_published 1 when the last audit pass wrote Steward's PolicyReports (or found them current), 0 when it could not (the CRDs are not served, or a write failed).
# TYPE steward_audit_reports_published gauge
steward_audit_reports_published 1
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "steward_audit_results", "steward_audit_reports_published"); err != nil {
		t.Error(err)
	}

	// installplanguard's caches stop answering: its results and counts
	// stand, and the pass asks to be repeated soon.
	olm.err, olm.findings = errors.New("informer has not synced"), nil
	if r.Pass(context.Background(), auditors) {
		t.Error("a pass where a rule could not answer must report it, so it is retried soon")
	}
	if n := len(resultsOf(report(t, c, "apps"))); n != 2 {
		t.Errorf("report holds %d results, want 2: the rule that could not answer keeps its results", n)
	}
	if v := testutil.ToFloat64(resultsGauge(m, "installplanguard", "fail")); v != 1 {
		t.Errorf("steward_audit_results{rule=installplanguard,result=fail} = %v, want 1 (kept)", v)
	}
}

func TestRunnerWithoutTheCRDsKeepsMetrics(t *testing.T) {
	suspend := &fakeRule{findings: []rule.Finding{finding("suspended", rule.AuditWarn, "apps", "web")}}
	auditors := []Auditor{{Name: "suspendnotice", Auditor: suspend}}
	p, c := newFakePublisher()
	c.PrependReactor("list", "*", notServedReactor)
	m := NewMetrics()
	r := NewRunner(nil, nil, p, m, logr.Discard())
	if r.Pass(context.Background(), auditors) {
		t.Error("a pass that could not publish must not succeed")
	}
	if !r.notServed {
		t.Error("the missing CRDs must be noted, so they are logged once")
	}
	if v := testutil.ToFloat64(resultsGauge(m, "suspendnotice", "warn")); v != 1 {
		t.Errorf("steward_audit_results{rule=suspendnotice,result=warn} = %v, want 1 without the CRDs", v)
	}
}
