package installplanguard

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stewardhq/steward/webhooks/rule"
)

var auditNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) string { return auditNow.Add(-d).Format(time.RFC3339) }

// subscriptionWith is a Subscription in operators named etcd, pointing at
// plan (none when empty), with the given conditions (type, status,
// reason, lastTransitionTime), last updated an hour ago.
func subscriptionWith(plan string, conds ...[4]string) *unstructured.Unstructured {
	status := map[string]any{"state": "UpgradePending", "lastUpdated": ago(time.Hour)}
	if plan != "" {
		status["installPlanRef"] = map[string]any{"name": plan, "namespace": "operators"}
	}
	var cs []any
	for _, c := range conds {
		cs = append(cs, map[string]any{"type": c[0], "status": c[1], "reason": c[2], "lastTransitionTime": c[3]})
	}
	if cs != nil {
		status["conditions"] = cs
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1",
		"kind":       "Subscription",
		"metadata":   map[string]any{"name": "etcd", "namespace": "operators", "uid": "s1"},
		"status":     status,
	}}
}

type fakeCaches struct {
	subs  []*unstructured.Unstructured
	plans map[string]planState
}

func (f fakeCaches) Phase(ns, name string) (string, bool) {
	p, ok := f.plans[ns+"/"+name]
	return p.phase, ok
}
func (f fakeCaches) subscriptions() ([]*unstructured.Unstructured, error) {
	return f.subs, nil
}
func (f fakeCaches) plan(ns, name string) (planState, bool) {
	p, ok := f.plans[ns+"/"+name]
	return p, ok
}

func TestAuditSubscriptions(t *testing.T) {
	etcd := corev1.ObjectReference{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Namespace: "operators", Name: "etcd", UID: "s1"}
	tests := map[string]struct {
		reason string
		sub    *unstructured.Unstructured
		plans  map[string]planState
		want   []rule.Finding
	}{
		"InstallPlanMissingCondition": {
			// OLM's catalog operator (v0.33.0, TestRealOLM) sets it only
			// on a Subscription that is not UpgradePending (one that is,
			// it plans again): AtLatestKnown, which a Subscription already
			// is while its plan installs, once the plan has created the CSV.
			reason: "OLM's own InstallPlanMissing condition is a failure",
			sub: func() *unstructured.Unstructured {
				s := subscriptionWith("install-abc", [4]string{"InstallPlanMissing", "True", "ReferencedInstallPlanNotFound", ago(time.Minute)})
				_ = unstructured.SetNestedField(s.Object, "AtLatestKnown", "status", "state")
				return s
			}(),
			want: []rule.Finding{{Check: "installplan-missing", Result: rule.AuditFail, Object: etcd,
				Message:    "Subscription operators/etcd is InstallPlanMissing: its InstallPlan operators/install-abc no longer exists, so OLM cannot finish installing or upgrading the operator. Delete the Subscription and apply it again to have OLM plan the install anew.",
				Properties: map[string]string{"installPlan": "operators/install-abc", "state": "AtLatestKnown", "condition": "InstallPlanMissing", "reason": "ReferencedInstallPlanNotFound"}}},
		},
		"PlanAbsentFromTheCache": {
			reason: "a plan the Subscription names that does not exist is missing, even before OLM says so",
			sub:    subscriptionWith("install-abc"),
			want: []rule.Finding{{Check: "installplan-missing", Result: rule.AuditFail, Object: etcd,
				Message:    "Subscription operators/etcd is InstallPlanMissing: its InstallPlan operators/install-abc no longer exists, so OLM cannot finish installing or upgrading the operator. Delete the Subscription and apply it again to have OLM plan the install anew.",
				Properties: map[string]string{"installPlan": "operators/install-abc", "state": "UpgradePending"}}},
		},
		"PlanJustCreated": {
			reason: "a plan named by a status written moments ago may not be cached yet",
			sub: func() *unstructured.Unstructured {
				s := subscriptionWith("install-abc")
				_ = unstructured.SetNestedField(s.Object, ago(10*time.Second), "status", "lastUpdated")
				return s
			}(),
		},
		"MissingConditionFalse": {
			reason: "a condition that is False is no finding",
			sub:    subscriptionWith("install-abc", [4]string{"InstallPlanMissing", "False", "", ago(time.Hour)}),
			plans:  map[string]planState{"operators/install-abc": {phase: "Complete"}},
		},
		"Healthy": {
			reason: "a Subscription whose plan completed is fine",
			sub:    subscriptionWith("install-abc"),
			plans:  map[string]planState{"operators/install-abc": {phase: "Complete", created: auditNow.Add(-time.Hour)}},
		},
		"NoPlanYet": {
			reason: "a Subscription OLM has not planned yet names no plan and is not reported",
			sub:    subscriptionWith(""),
		},
		"PendingLong": {
			reason: "a plan waiting for approval for longer than the threshold is stuck",
			sub:    subscriptionWith("install-abc", [4]string{"InstallPlanPending", "True", "RequiresApproval", ago(2 * time.Hour)}),
			plans:  map[string]planState{"operators/install-abc": {phase: "RequiresApproval"}},
			want: []rule.Finding{{Check: "installplan-stuck", Result: rule.AuditWarn, Object: etcd,
				Message:    `Subscription operators/etcd is stuck: its InstallPlan operators/install-abc has been RequiresApproval since 2026-03-01T10:00:00Z. Instead of deleting the plan, approve it (kubectl -n operators patch installplan install-abc --type merge -p '{"spec":{"approved":true}}').`,
				Properties: map[string]string{"installPlan": "operators/install-abc", "state": "UpgradePending", "condition": "InstallPlanPending", "reason": "RequiresApproval", "since": ago(2 * time.Hour)}}},
		},
		"PendingBriefly": {
			reason: "a plan pending for a few minutes is an install under way",
			sub:    subscriptionWith("install-abc", [4]string{"InstallPlanPending", "True", "Installing", ago(5 * time.Minute)}),
			plans:  map[string]planState{"operators/install-abc": {phase: "Installing", created: auditNow.Add(-time.Hour)}},
		},
		"InstallingLongWithoutCondition": {
			reason: "a plan installing for longer than the threshold is stuck, told by its creation when there is no condition",
			sub:    subscriptionWith("install-abc"),
			plans:  map[string]planState{"operators/install-abc": {phase: "Installing", created: auditNow.Add(-20 * time.Minute)}},
			want: []rule.Finding{{Check: "installplan-stuck", Result: rule.AuditWarn, Object: etcd,
				Message:    "Subscription operators/etcd is stuck: its InstallPlan operators/install-abc has been Installing since 2026-03-01T11:40:00Z. Instead of deleting the plan, wait until it is Complete or Failed.",
				Properties: map[string]string{"installPlan": "operators/install-abc", "state": "UpgradePending", "phase": "Installing", "since": ago(20 * time.Minute)}}},
		},
		"Failed": {
			reason: "a failed plan is stuck at once: OLM does not retry it",
			sub:    subscriptionWith("install-abc"),
			plans:  map[string]planState{"operators/install-abc": {phase: "Failed"}},
			want: []rule.Finding{{Check: "installplan-stuck", Result: rule.AuditWarn, Object: etcd,
				Message:    "Subscription operators/etcd is stuck: its InstallPlan operators/install-abc Failed, and OLM does not retry a failed plan. Fix the cause (kubectl -n operators get installplan install-abc -o yaml shows it), then delete the Subscription and apply it again.",
				Properties: map[string]string{"installPlan": "operators/install-abc", "state": "UpgradePending", "phase": "Failed"}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := New(Config{})
			r.now = func() time.Time { return auditNow }
			r.plans = fakeCaches{subs: []*unstructured.Unstructured{tc.sub}, plans: tc.plans}
			got, err := r.Audit(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			sortFindings(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nAudit(): -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAuditErrsWithoutCaches(t *testing.T) {
	if _, err := New(Config{}).Audit(context.Background(), nil); err == nil {
		t.Error("a rule never set up must not report that every Subscription is fine")
	}
}

func TestKeepPlanStatus(t *testing.T) {
	full := subscriptionWith("install-abc",
		[4]string{"InstallPlanMissing", "True", "ReferencedInstallPlanNotFound", ago(time.Minute)},
		[4]string{"CatalogSourcesUnhealthy", "False", "AllCatalogSourcesHealthy", ago(time.Hour)})
	full.Object["spec"] = map[string]any{"channel": "stable", "name": "etcd", "config": map[string]any{"env": []any{"big"}}}
	_ = unstructured.SetNestedField(full.Object, "etcd.v1", "status", "currentCSV")
	full.SetLabels(map[string]string{"a": "b"})
	full.SetResourceVersion("9")
	want := map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1",
		"kind":       "Subscription",
		"metadata":   map[string]any{"name": "etcd", "namespace": "operators", "uid": "s1", "resourceVersion": "9"},
		"status": map[string]any{
			"state":          "UpgradePending",
			"lastUpdated":    ago(time.Hour),
			"installPlanRef": map[string]any{"name": "install-abc", "namespace": "operators"},
			"conditions":     []any{map[string]any{"type": "InstallPlanMissing", "status": "True", "reason": "ReferencedInstallPlanNotFound", "lastTransitionTime": ago(time.Minute)}},
		},
	}
	got, err := keepPlanStatus(full)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.(*unstructured.Unstructured).Object); diff != "" {
		t.Errorf("keepPlanStatus keeps identity, state, the plan reference and the InstallPlan conditions only: -want +got:\n%s", diff)
	}
	again, _ := keepPlanStatus(got)
	if diff := cmp.Diff(want, again.(*unstructured.Unstructured).Object); diff != "" {
		t.Errorf("keepPlanStatus must be idempotent: -want +got:\n%s", diff)
	}
}
