package claimguard

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/serving"
)

func TestSpec(t *testing.T) {
	spec := New(Config{}).Spec()
	if spec.Name != "claimguard" || spec.Type != rule.Validating {
		t.Fatalf("Spec() = %s %s, want claimguard Validating", spec.Name, spec.Type)
	}
	type entry struct {
		Name, Path    string
		FailurePolicy admissionregistrationv1.FailurePolicyType
		Timeout       int32
		RuleCount     int
		HasSelector   bool
	}
	var got []entry
	for _, w := range spec.Webhooks {
		got = append(got, entry{w.Name, w.Path, w.FailurePolicy, w.TimeoutSeconds, len(w.Rules), w.ObjectSelector != nil})
		if w.FailurePolicyReason == "" {
			t.Errorf("%s states no reason for its failure policy", w.Name)
		}
	}
	want := []entry{
		{"claimguard.steward.dev", "/validate/claimguard", admissionregistrationv1.Fail, 2, 0, false},
		{"claimguard-managed.steward.dev", "/validate/claimguard/managed", admissionregistrationv1.Fail, 2, 1, true},
		{"claimguard-delete.steward.dev", "/validate/claimguard/delete", admissionregistrationv1.Ignore, 2, 0, false},
		{"claimguard-deleting.steward.dev", "/validate/claimguard/deleting", admissionregistrationv1.Fail, 2, 1, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (claim/XR rules are filled in at run time; the MR entry is narrowed by a selector): -want, +got:\n%s", diff)
	}
	managed := spec.Webhooks[1]
	if diff := cmp.Diff(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "crossplane.io/composite", Operator: metav1.LabelSelectorOpExists}}}, managed.ObjectSelector); diff != "" {
		t.Errorf("the MR entry must only see composed resources: -want, +got:\n%s", diff)
	}
	var names []string
	for _, mc := range managed.MatchConditions {
		names = append(names, mc.Name)
	}
	if diff := cmp.Diff([]string{"has-external-name", "not-leases-or-reviews"}, names); diff != "" {
		t.Errorf("the MR entry's wildcard must be narrowed by matchConditions: -want, +got:\n%s", diff)
	}
	if r := managed.Rules[0]; !cmp.Equal(r.Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}) {
		t.Errorf("the MR entry must match CREATE only, got %v", r.Operations)
	}
}

func TestConfig(t *testing.T) {
	var c Config
	c.Default()
	if c.Mode != rule.Enforce || !c.manageRules() || c.WebhookConfigurationName != "steward" || c.RequireForegroundDelete {
		t.Errorf("defaults: %+v", c)
	}
	off := false
	c = Config{Mode: "loud", WebhookConfigurationName: "Not_A_Name", ManageWebhookRules: &off}
	c.Default()
	errs := c.Validate(field.NewPath("rules", "claimguard"))
	var paths []string
	for _, e := range errs {
		paths = append(paths, e.Field)
	}
	if diff := cmp.Diff([]string{"rules.claimguard.mode", "rules.claimguard.webhookConfigurationName"}, paths); diff != "" {
		t.Errorf("Validate names the wrong fields: -want, +got:\n%s", diff)
	}
	if c.manageRules() {
		t.Error("manageWebhookRules: false is ignored")
	}
}

func TestPolicyRules(t *testing.T) {
	off := false
	cases := map[string]struct {
		reason string
		cfg    Config
		want   []rbacv1.PolicyRule
	}{
		"ManagingRules": {
			reason: "Read XRDs (CRDs come through the cluster cache); get, list, watch and patch Steward's own webhook configuration, by name only.",
			cfg:    Config{},
			want: []rbacv1.PolicyRule{
				{APIGroups: []string{"apiextensions.crossplane.io"}, Resources: []string{"compositeresourcedefinitions"}, Verbs: []string{"list", "watch"}},
				{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"}, ResourceNames: []string{"steward"}, Verbs: []string{"get", "list", "watch", "patch"}},
			},
		},
		"NotManagingRules": {
			reason: "Without rule management Steward never touches its webhook configuration.",
			cfg:    Config{ManageWebhookRules: &off},
			want: []rbacv1.PolicyRule{
				{APIGroups: []string{"apiextensions.crossplane.io"}, Resources: []string{"compositeresourcedefinitions"}, Verbs: []string{"list", "watch"}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, New(tc.cfg).Spec().PolicyRules()); diff != "" {
				t.Errorf("%s\nSpec().PolicyRules(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestFailurePolicies proves what an unsynced cache means at each entry
// once the serving layer applies the entry's failure policy.
func TestFailurePolicies(t *testing.T) {
	r := newCluster().xrd(pgXRD, pgXRGVR, false, stateSyncing).defaults()
	spec := r.Spec()
	create := admissiontest.Create(pgClaimGVR, "PostgreSQLInstance", req("db", inNamespace("default"))).Build()
	del := admissiontest.Delete(pgClaimGVR, "PostgreSQLInstance", req("db", inNamespace("default"), compositeDeletePolicy("Foreground"))).Build()

	got := ruletest.Handler(r, spec.Webhooks[0], rule.Enforce, serving.Settings{}, nil).Handle(context.Background(), create)
	if got.Allowed || got.Result.Code != http.StatusServiceUnavailable {
		t.Errorf("create entry (Fail): an unsynced cache must refuse, got allowed=%v %+v", got.Allowed, got.Result)
	}
	got = ruletest.Handler(r, spec.Webhooks[2], rule.Enforce, serving.Settings{}, nil).Handle(context.Background(), del)
	if !got.Allowed || len(got.Warnings) != 1 {
		t.Errorf("delete entry (Ignore): an unsynced cache must allow with a warning, got allowed=%v warnings=%v", got.Allowed, got.Warnings)
	}
}

func TestReadyCheck(t *testing.T) {
	r := New(Config{})
	if r.readyCheck(nil) == nil {
		t.Error("ready before the caches synced")
	}
	r.found.ready.Store(true)
	if err := r.readyCheck(nil); err != nil {
		t.Errorf("not ready after the caches synced: %v", err)
	}
}

func TestPropagationPolicy(t *testing.T) {
	cases := map[string]struct {
		reason  string
		raw     string
		want    metav1.DeletionPropagation
		wantErr bool
	}{
		"None":       {reason: "No options: the API server's default.", raw: "", want: ""},
		"Foreground": {reason: "kubectl delete --cascade=foreground.", raw: `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","propagationPolicy":"Foreground"}`, want: metav1.DeletePropagationForeground},
		"Orphan":     {reason: "The deprecated orphanDependents still means Orphan.", raw: `{"orphanDependents":true}`, want: metav1.DeletePropagationOrphan},
		"PolicyWins": {reason: "propagationPolicy overrides orphanDependents.", raw: `{"orphanDependents":true,"propagationPolicy":"Background"}`, want: metav1.DeletePropagationBackground},
		"Garbage":    {reason: "Not JSON.", raw: `{`, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := propagationPolicy([]byte(tc.raw))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("%s\npropagationPolicy(%q) = %q, %v; want %q, error %v", tc.reason, tc.raw, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
