package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/serving"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newFakePublisher(objs ...runtime.Object) (*Publisher, *dynamicfake.FakeDynamicClient) {
	return newFakePublisherOf(nil, objs...)
}

// newFakePublisherOf writes apis (PolicyReports when nil) to a client
// serving both report APIs.
func newFakePublisherOf(apis []ReportAPI, objs ...runtime.Object) (*Publisher, *dynamicfake.FakeDynamicClient) {
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		PolicyReportAPI().Namespaced: "PolicyReportList",
		PolicyReportAPI().Cluster:    "ClusterPolicyReportList",
		OpenReportsAPI().Namespaced:  "ReportList",
		OpenReportsAPI().Cluster:     "ClusterReportList",
	}, objs...)
	p := NewPublisher(c, apis...)
	p.now = func() time.Time { return t0 }
	return p, c
}

func finding(check string, result rule.AuditResult, ns, name string) rule.Finding {
	return rule.Finding{
		Check:      check,
		Result:     result,
		Object:     corev1.ObjectReference{APIVersion: "example.com/v1", Kind: "Thing", Namespace: ns, Name: name},
		Message:    fmt.Sprintf("Thing %s/%s is %s", ns, name, check),
		Properties: map[string]string{"why": check},
	}
}

func report(t *testing.T, c *dynamicfake.FakeDynamicClient, ns string) *unstructured.Unstructured {
	t.Helper()
	var res = c.Resource(PolicyReportAPI().Cluster)
	var u *unstructured.Unstructured
	var err error
	if ns == "" {
		u, err = res.Get(context.Background(), ReportName, metav1.GetOptions{})
	} else {
		u, err = c.Resource(PolicyReportAPI().Namespaced).Namespace(ns).Get(context.Background(), ReportName, metav1.GetOptions{})
	}
	if err != nil {
		return nil
	}
	return u
}

// summary reads (pass, fail, warn) of a report.
func summary(u *unstructured.Unstructured) [3]int64 {
	var out [3]int64
	for i, k := range []string{"pass", "fail", "warn"} {
		out[i], _, _ = unstructured.NestedInt64(u.Object, "summary", k)
	}
	return out
}

func writes(c *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range c.Actions() {
		switch a.GetVerb() {
		case "create", "update", "delete":
			ns := a.GetNamespace()
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource+" "+ns)
		}
	}
	return out
}

func TestPublishWritesOneReportPerNamespaceAndOneForTheCluster(t *testing.T) {
	p, c := newFakePublisher()
	done, err := p.Publish(context.Background(), map[string][]rule.Finding{
		"suspendnotice":    {finding("suspended", rule.AuditWarn, "apps", "web")},
		"installplanguard": {finding("installplan-missing", rule.AuditFail, "apps", "etcd"), finding("installplan-stuck", rule.AuditWarn, "ops", "db")},
		"apimigration":     {finding("stored-versions", rule.AuditFail, "", "kustomizations.kustomize.toolkit.fluxcd.io")},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if done.Created != 3 {
		t.Errorf("created %d reports, want 3 (apps, ops, cluster)", done.Created)
	}
	apps := report(t, c, "apps")
	if apps == nil {
		t.Fatal("no PolicyReport steward in apps")
	}
	if got := apps.GetLabels()[ManagedByLabel]; got != ManagedBy {
		t.Errorf("label %s = %q, want %q", ManagedByLabel, got, ManagedBy)
	}
	want := []Result{
		{Source: "steward", Policy: "installplanguard", Rule: "installplan-missing", Category: "installplanguard", Severity: "high", Scored: true, Result: "fail",
			Resources:  []corev1.ObjectReference{{APIVersion: "example.com/v1", Kind: "Thing", Namespace: "apps", Name: "etcd"}},
			Message:    "Thing apps/etcd is installplan-missing",
			Properties: map[string]string{"why": "installplan-missing"},
			Timestamp:  Timestamp{Seconds: t0.Unix()}},
		{Source: "steward", Policy: "suspendnotice", Rule: "suspended", Category: "suspendnotice", Severity: "medium", Scored: true, Result: "warn",
			Resources:  []corev1.ObjectReference{{APIVersion: "example.com/v1", Kind: "Thing", Namespace: "apps", Name: "web"}},
			Message:    "Thing apps/web is suspended",
			Properties: map[string]string{"why": "suspended"},
			Timestamp:  Timestamp{Seconds: t0.Unix()}},
	}
	if diff := cmp.Diff(want, resultsOf(apps)); diff != "" {
		t.Errorf("the apps report holds its namespace's findings, fail first (-want +got):\n%s", diff)
	}
	if got := summary(apps); got != [3]int64{0, 1, 1} {
		t.Errorf("apps summary (pass, fail, warn) = %v, want [0 1 1]", got)
	}
	cluster := report(t, c, "")
	if cluster == nil || len(resultsOf(cluster)) != 1 || resultsOf(cluster)[0].Policy != "apimigration" {
		t.Errorf("the ClusterPolicyReport must hold the cluster-scoped finding, got %v", cluster)
	}
}

func TestPublishWritesNothingWhenNothingChanged(t *testing.T) {
	p, c := newFakePublisher()
	findings := map[string][]rule.Finding{"suspendnotice": {finding("suspended", rule.AuditWarn, "apps", "web")}}
	if _, err := p.Publish(context.Background(), findings, nil); err != nil {
		t.Fatal(err)
	}
	p.now = func() time.Time { return t0.Add(5 * time.Minute) }
	c.ClearActions()
	done, err := p.Publish(context.Background(), findings, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := writes(c); len(w) != 0 || done.Unchanged != 1 {
		t.Errorf("an unchanged pass wrote %v (unchanged %d): the report must not be written again, nor its first-seen timestamps moved", w, done.Unchanged)
	}

	// A new finding updates the report in place; the old one keeps the
	// time it was first seen.
	findings["suspendnotice"] = append(findings["suspendnotice"], finding("suspended", rule.AuditWarn, "apps", "api"))
	c.ClearActions()
	if _, err := p.Publish(context.Background(), findings, nil); err != nil {
		t.Fatal(err)
	}
	if w := writes(c); !cmp.Equal(w, []string{"update policyreports apps"}) {
		t.Errorf("a changed pass wrote %v, want one update", w)
	}
	stamps := map[string]int64{}
	for _, r := range resultsOf(report(t, c, "apps")) {
		stamps[r.object().Name] = r.Timestamp.Seconds
	}
	if stamps["web"] != t0.Unix() || stamps["api"] != t0.Add(5*time.Minute).Unix() {
		t.Errorf("timestamps = %v: each result keeps when it was first seen", stamps)
	}
}

func TestPublishDeletesReportsLeftEmpty(t *testing.T) {
	p, c := newFakePublisher()
	if _, err := p.Publish(context.Background(), map[string][]rule.Finding{
		"suspendnotice": {finding("suspended", rule.AuditWarn, "apps", "web"), finding("suspended", rule.AuditWarn, "", "cluster-thing")},
	}, nil); err != nil {
		t.Fatal(err)
	}
	done, err := p.Publish(context.Background(), map[string][]rule.Finding{"suspendnotice": nil}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if done.Deleted != 2 || report(t, c, "apps") != nil || report(t, c, "") != nil {
		t.Errorf("reports with nothing left to report must be deleted; deleted %d", done.Deleted)
	}
}

func TestPublishLeavesOtherReportsAlone(t *testing.T) {
	theirs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
		"metadata": map[string]any{"name": "kyverno-pol", "namespace": "apps", "labels": map[string]any{ManagedByLabel: "kyverno"}},
	}}
	unlabelled := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
		"metadata": map[string]any{"name": ReportName, "namespace": "ops"},
	}}
	p, c := newFakePublisher(theirs, unlabelled)
	if _, err := p.Publish(context.Background(), map[string][]rule.Finding{}, nil); err != nil {
		t.Fatal(err)
	}
	if w := writes(c); len(w) != 0 {
		t.Errorf("Steward wrote %v: it must touch only the reports it labelled", w)
	}
}

func TestPublishKeepsTheResultsOfARuleThatCouldNotAnswer(t *testing.T) {
	p, c := newFakePublisher()
	if _, err := p.Publish(context.Background(), map[string][]rule.Finding{
		"suspendnotice":    {finding("suspended", rule.AuditWarn, "apps", "web")},
		"installplanguard": {finding("installplan-missing", rule.AuditFail, "apps", "etcd")},
	}, nil); err != nil {
		t.Fatal(err)
	}
	// installplanguard's caches are not synced this pass.
	if _, err := p.Publish(context.Background(), map[string][]rule.Finding{"suspendnotice": nil}, []string{"installplanguard"}); err != nil {
		t.Fatal(err)
	}
	got := resultsOf(report(t, c, "apps"))
	if len(got) != 1 || got[0].Policy != "installplanguard" || got[0].Timestamp.Seconds != t0.Unix() {
		t.Errorf("results = %+v: a rule that could not answer keeps its results as they were; one that answered nothing loses its own", got)
	}
	// A rule neither answered nor kept (disabled) leaves the reports.
	if _, err := p.Publish(context.Background(), map[string][]rule.Finding{"suspendnotice": nil}, nil); err != nil {
		t.Fatal(err)
	}
	if report(t, c, "apps") != nil {
		t.Error("a disabled rule's results must leave the reports, and the empty report be deleted")
	}
}

func TestPublishBoundsEachReport(t *testing.T) {
	p, c := newFakePublisher()
	p.MaxResults = 3
	var findings []rule.Finding
	for i := range 5 {
		findings = append(findings, finding("suspended", rule.AuditWarn, "apps", fmt.Sprintf("w%d", i)))
	}
	findings = append(findings, finding("installplan-missing", rule.AuditFail, "apps", "z-last-by-name"))
	findings = append(findings, rule.Finding{Check: "ready", Result: rule.AuditPass, Object: corev1.ObjectReference{Kind: "Thing", Namespace: "apps", Name: "a"}})
	if _, err := p.Publish(context.Background(), map[string][]rule.Finding{"r": findings}, nil); err != nil {
		t.Fatal(err)
	}
	apps := report(t, c, "apps")
	var got []string
	for _, r := range resultsOf(apps) {
		got = append(got, r.Result+" "+r.object().Name)
	}
	want := []string{"fail z-last-by-name", "warn w0", "warn w1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a bounded report keeps failures first, then warnings, in a stable order (-want +got):\n%s", diff)
	}
	if n := apps.GetAnnotations()[OmittedAnnotation]; n != "4" {
		t.Errorf("%s = %q, want 4 (three warnings and a pass left out)", OmittedAnnotation, n)
	}
	if s := summary(apps); s != [3]int64{0, 1, 2} {
		t.Errorf("summary (pass, fail, warn) = %v, want the results the report holds, [0 1 2]", s)
	}
}

func TestPublishWithoutTheCRDs(t *testing.T) {
	p, c := newFakePublisher()
	c.PrependReactor("list", "policyreports", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, &notFound{}
	})
	_, err := p.Publish(context.Background(), map[string][]rule.Finding{"r": {finding("suspended", rule.AuditWarn, "apps", "web")}}, nil)
	if !errors.Is(err, ErrNotServed) {
		t.Errorf("Publish without the CRDs = %v, want ErrNotServed", err)
	}
}

// notFound is the API server's 404 for a resource it does not serve.
type notFound struct{}

func (*notFound) Error() string { return "the server could not find the requested resource" }
func (*notFound) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound}
}

func notServedReactor(clienttesting.Action) (bool, runtime.Object, error) {
	return true, nil, &notFound{}
}

func TestPublishSkipsNamespacesBeingDeleted(t *testing.T) {
	p, c := newFakePublisher()
	c.PrependReactor("create", "policyreports", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != "leaving" {
			return false, nil, nil
		}
		err := apierrors.NewForbidden(schema.GroupResource{Group: "wgpolicyk8s.io", Resource: "policyreports"}, ReportName, errors.New("namespace leaving is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
		return true, nil, err
	})
	_, err := p.Publish(context.Background(), map[string][]rule.Finding{"suspendnotice": {
		finding("suspended", rule.AuditWarn, "leaving", "web"), finding("suspended", rule.AuditWarn, "apps", "web"),
	}}, nil)
	if err != nil {
		t.Errorf("a namespace being deleted refuses new objects; its report is not an error, got %v", err)
	}
	if report(t, c, "apps") == nil {
		t.Error("the other namespaces' reports must still be written")
	}
}

func TestReportsStayWithinTheirByteBound(t *testing.T) {
	big := strings.Repeat("x", 900)
	var findings []rule.Finding
	for i := range 2000 {
		f := finding("suspended", rule.AuditWarn, "apps", fmt.Sprintf("w%04d", i))
		f.Properties = map[string]string{"detail": big}
		findings = append(findings, f)
	}
	rep := Reports(Results(map[string][]rule.Finding{"r": findings}, t0), MaxResults)["apps"]
	total := 0
	for _, r := range rep.Results {
		total += jsonSize(r)
	}
	if total > MaxReportBytes || len(rep.Results) >= MaxResults || rep.Omitted != 2000-len(rep.Results) {
		t.Errorf("report of %d results (%d bytes), %d omitted: want at most %d bytes and every other result counted as omitted", len(rep.Results), total, rep.Omitted, MaxReportBytes)
	}
	long := finding("suspended", rule.AuditWarn, "apps", "long")
	long.Message = strings.Repeat("y", 5000)
	if got := FromFinding("r", long, t0).Message; len(got) > serving.MaxEventNote {
		t.Errorf("a message of %d bytes must be cut to %d", len(got), serving.MaxEventNote)
	}
}

// TestPublishWritesBothReportAPIsAlike: with both report APIs configured
// and served, every namespace gets a PolicyReport and an OpenReports
// Report holding the same results (the Report also names its source), the
// cluster a ClusterPolicyReport and a ClusterReport; a second pass writes
// nothing, and a cleared finding clears both.
func TestPublishWritesBothReportAPIsAlike(t *testing.T) {
	p, c := newFakePublisherOf([]ReportAPI{PolicyReportAPI(), OpenReportsAPI()})
	// A clock a second on at each reading: one pass dates its results
	// once, so both reports carry the same timestamps.
	clock := t0
	p.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	findings := map[string][]rule.Finding{
		"suspendnotice": {finding("suspended", rule.AuditWarn, "apps", "web")},
		"apimigration":  {finding("stored-versions", rule.AuditFail, "", "kustomizations.kustomize.toolkit.fluxcd.io")},
	}
	done, err := p.Publish(context.Background(), findings, nil)
	if err != nil || done.Created != 4 {
		t.Fatalf("created %d reports (%v), want 4 (two APIs, apps and the cluster)", done.Created, err)
	}
	policyReport, _ := c.Resource(PolicyReportAPI().Namespaced).Namespace("apps").Get(context.Background(), ReportName, metav1.GetOptions{})
	openReport, err := c.Resource(OpenReportsAPI().Namespaced).Namespace("apps").Get(context.Background(), ReportName, metav1.GetOptions{})
	if err != nil || policyReport == nil {
		t.Fatalf("reports in apps: PolicyReport %v, Report %v", policyReport, err)
	}
	if got := []string{openReport.GetAPIVersion(), openReport.GetKind(), str(openReport.Object, "source")}; !slices.Equal(got, []string{"openreports.io/v1alpha1", "Report", "steward"}) {
		t.Errorf("the OpenReports report is %v, want openreports.io/v1alpha1 Report with source steward", got)
	}
	if diff := cmp.Diff(resultsOf(policyReport), resultsOf(openReport)); diff != "" || len(resultsOf(openReport)) != 1 {
		t.Errorf("the two APIs' reports differ (-PolicyReport +Report):\n%s", diff)
	}
	if cluster, err := c.Resource(OpenReportsAPI().Cluster).Get(context.Background(), ReportName, metav1.GetOptions{}); err != nil || cluster.GetKind() != "ClusterReport" {
		t.Errorf("ClusterReport %v: %v", cluster, err)
	}
	c.ClearActions()
	if done, err := p.Publish(context.Background(), findings, nil); err != nil || done.Unchanged != 4 || len(writes(c)) != 0 {
		t.Errorf("an unchanged pass: %+v, %v, writes %v; want 4 unchanged, no writes", done, err, writes(c))
	}
	delete(findings, "suspendnotice")
	if done, err := p.Publish(context.Background(), findings, nil); err != nil || done.Deleted != 2 {
		t.Errorf("a cleared namespace: %+v, %v; want both apps reports deleted", done, err)
	}
}

// TestPublishSkipsAReportAPIThatIsNotServed: an API whose CRDs are not
// installed is skipped while the other is written; only when none is
// served is it ErrNotServed.
func TestPublishSkipsAReportAPIThatIsNotServed(t *testing.T) {
	p, c := newFakePublisherOf([]ReportAPI{PolicyReportAPI(), OpenReportsAPI()})
	c.PrependReactor("list", "policyreports", notServedReactor)
	findings := map[string][]rule.Finding{"suspendnotice": {finding("suspended", rule.AuditWarn, "apps", "web")}}
	if done, err := p.Publish(context.Background(), findings, nil); err != nil || done.Created != 1 {
		t.Errorf("OpenReports alone served: %+v, %v; want its Report created", done, err)
	}
	c.PrependReactor("list", "reports", notServedReactor)
	if _, err := p.Publish(context.Background(), findings, nil); !errors.Is(err, ErrNotServed) {
		t.Errorf("neither served: %v, want ErrNotServed", err)
	}
}

// TestRBACFollowsTheConfiguredReportAPIs: Steward is granted writes on
// the report APIs audit.reportAPIs names, and no others.
func TestRBACFollowsTheConfiguredReportAPIs(t *testing.T) {
	groups := func(c config.AuditConfig) []string {
		var out []string
		for _, r := range RBAC(c) {
			out = append(out, r.APIGroups...)
		}
		return out
	}
	cases := map[string]struct {
		apis []string
		want []string
	}{
		"Default":           {nil, []string{"wgpolicyk8s.io", "wgpolicyk8s.io", "openreports.io", "openreports.io"}},
		"OpenReportsOnly":   {[]string{config.ReportAPIOpenReports}, []string{"openreports.io", "openreports.io"}},
		"PolicyReportsOnly": {[]string{config.ReportAPIPolicyReport}, []string{"wgpolicyk8s.io", "wgpolicyk8s.io"}},
		"None":              {[]string{}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, groups(config.AuditConfig{ReportAPIs: tc.apis})); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}
