package claimguard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/stewardhq/steward/webhooks/rule"
)

// dynamicOf returns the DynamicRules of each entry of r's Spec, by name.
func dynamicOf(r *Rule) map[string]*rule.DynamicRules {
	out := map[string]*rule.DynamicRules{}
	for _, wh := range r.Spec().Webhooks {
		out[wh.Name] = wh.DynamicRules
	}
	return out
}

// TestDynamicRulesFollowTheXRDs proves what claimguard tells the server's
// rules syncer: the create and delete entries carry the synced XRDs' claim
// and XR kinds, nothing before the first discovery synced, and a change
// notice with every snapshot.
func TestDynamicRulesFollowTheXRDs(t *testing.T) {
	create, del := rule.WebhookName(Name, createSuffix), rule.WebhookName(Name, deleteSuffix)
	withPG := newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced).managed(rdsGK, rdsGVR, false, stateSynced)
	scope := admissionregistrationv1.AllScopes
	pgRules := func(op admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{op}, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"database.example.org"}, APIVersions: []string{"*"}, Resources: []string{"postgresqlinstances", "xpostgresqlinstances"}, Scope: &scope}}}
	}

	t.Run("OnlyTheClaimAndCompositeEntriesAreDynamic", func(t *testing.T) {
		d := dynamicOf(withPG.defaults())
		for name, dr := range d {
			if (dr != nil) != (name == create || name == del) {
				t.Errorf("%s: dynamic = %v; only the create and delete entries' rules follow the XRDs", name, dr != nil)
			}
		}
		if d[create].Configuration != "steward" || d[create].Guards != "claim and composite resource kinds" {
			t.Errorf("create entry: configuration %q, guards %q; want steward and what the log lines name", d[create].Configuration, d[create].Guards)
		}
	})

	t.Run("RulesOfTheSyncedXRDs", func(t *testing.T) {
		d := dynamicOf(withPG.defaults())
		for entry, want := range map[string][]admissionregistrationv1.RuleWithOperations{create: pgRules(admissionregistrationv1.Create), del: pgRules(admissionregistrationv1.Delete)} {
			got, ok := d[entry].Current()
			if !ok {
				t.Fatalf("%s: not ready with synced caches", entry)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("rules of %s: -want, +got:\n%s", entry, diff)
			}
		}
	})

	t.Run("NothingBeforeTheFirstDiscoverySynced", func(t *testing.T) {
		r := New(Config{})
		if _, ok := dynamicOf(r)[create].Current(); ok {
			t.Error("without a snapshot the rules were reported known; the syncer would empty the live rules")
		}
		r.found.snap.Store(withPG.s)
		if _, ok := dynamicOf(r)[create].Current(); ok {
			t.Error("before the caches synced the rules were reported known")
		}
	})

	t.Run("EverySnapshotIsANotice", func(t *testing.T) {
		r := withPG.defaults()
		r.notifyRules()
		select {
		case <-dynamicOf(r)[create].Changed:
		default:
			t.Error("a new snapshot did not tell the syncer")
		}
	})

	t.Run("ConfiguredName", func(t *testing.T) {
		d := dynamicOf(withPG.rule(Config{WebhookConfigurationName: "steward-crossplane"}))
		if d[create].Configuration != "steward-crossplane" || d[del].Configuration != "steward-crossplane" {
			t.Errorf("configurations %q, %q; want webhookConfigurationName", d[create].Configuration, d[del].Configuration)
		}
	})

	t.Run("NotManaged", func(t *testing.T) {
		off := false
		for name, dr := range dynamicOf(withPG.rule(Config{ManageWebhookRules: &off})) {
			if dr != nil {
				t.Errorf("%s has dynamic rules with manageWebhookRules: false; something else maintains them", name)
			}
		}
	})
}
