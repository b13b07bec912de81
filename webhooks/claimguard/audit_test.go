package claimguard

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/rule"
)

func warnAfter(d time.Duration) Config {
	return Config{ForegroundDeletionWarnAfter: &metav1.Duration{Duration: d}}
}

func audit(t *testing.T, r *Rule) []rule.Finding {
	t.Helper()
	got, err := r.Audit(context.Background(), nil)
	if err != nil {
		t.Fatalf("Audit(...): %v", err)
	}
	return got
}

// ignoreMessages compares findings without their messages, which
// TestAuditMessages holds to the denials' words.
var ignoreMessages = cmpopts.IgnoreFields(rule.Finding{}, "Message")

func TestAuditForegroundDeletion(t *testing.T) {
	pgRef := func(name string) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: "database.example.org/v1alpha1", Kind: "XPostgreSQLInstance", Name: name}
	}
	var many []*object
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		many = append(many, mr("db-q-"+n, composedByPG("db-q"), finalizers(mrFinalizer)))
	}
	cases := map[string]struct {
		reason string
		rule   *Rule
		want   []rule.Finding
	}{
		"DeletingForLessThanTheThresholdIsNotReported": {
			reason: "The standard XR has been deleting for 3 minutes, under the default 15.",
			rule:   standard().defaults(),
		},
		"DeletingForLongerThanTheThresholdWarns": {
			reason: "Past the threshold the XR is reported with the resources still holding it and its claim.",
			rule:   standard().rule(warnAfter(time.Minute)),
			want: []rule.Finding{{
				Check: CheckForegroundDeletion, Result: rule.AuditWarn, Object: pgRef("db-x7k2p"),
				Properties: map[string]string{
					"blockedBy":     "RDSInstance db-x7k2p-abcde, Role db-x7k2p-fghij",
					"claim":         "default/db",
					"deletingSince": "2026-03-01T11:57:00Z",
				},
			}},
		},
		"BackgroundDeletionIsNotReported": {
			reason: "Without the foregroundDeletion finalizer nothing waits for the composed resources.",
			rule: newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced,
				xr("db-b", deletingSince(time.Hour), finalizers(xrFinalizer))).rule(warnAfter(time.Minute)),
		},
		"LiveCompositesAreNotReported": {
			reason: "A composite resource that is not being deleted has nothing to wait for.",
			rule:   newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced, xr("db-live", finalizers(xrFinalizer))).rule(warnAfter(time.Minute)),
		},
		"HeldOnlyByFinalizers": {
			reason: "With no composed resource left, what holds the XR is its finalizers.",
			rule: newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced,
				xr("db-f", deletingSince(time.Hour), finalizers(foregroundFinalizer, xrFinalizer))).defaults(),
			want: []rule.Finding{{
				Check: CheckForegroundDeletion, Result: rule.AuditWarn, Object: pgRef("db-f"),
				Properties: map[string]string{
					"blockedBy":     "finalizers foregroundDeletion, composite.apiextensions.crossplane.io",
					"deletingSince": "2026-03-01T11:00:00Z",
				},
			}},
		},
		"BlockedByIsBounded": {
			reason: "Seven holders are named five at a time, with a count of the rest.",
			rule: newCluster().xrd(pgXRD, pgXRGVR, false, stateSynced,
				xr("db-q", deletingSince(time.Hour), finalizers(foregroundFinalizer))).
				managed(rdsGK, rdsGVR, false, stateSynced, many...).defaults(),
			want: []rule.Finding{{
				Check: CheckForegroundDeletion, Result: rule.AuditWarn, Object: pgRef("db-q"),
				Properties: map[string]string{
					"blockedBy":     "RDSInstance db-q-a, RDSInstance db-q-b, RDSInstance db-q-c, RDSInstance db-q-d, RDSInstance db-q-e, and 2 more",
					"deletingSince": "2026-03-01T11:00:00Z",
				},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := audit(t, tc.rule)
			if diff := cmp.Diff(tc.want, got, ignoreMessages); diff != "" {
				t.Errorf("%s\nAudit(...) (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAuditExternalNameCollision(t *testing.T) {
	rdsRef := func(name string) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: "database.aws.example.org/v1beta1", Kind: "RDSInstance", Name: name}
	}
	collision := func(ref corev1.ObjectReference, ext, others string) rule.Finding {
		return rule.Finding{Check: CheckExternalNameCollision, Result: rule.AuditFail, Object: ref,
			Properties: map[string]string{"externalName": ext, "others": others}}
	}
	cases := map[string]struct {
		reason string
		rule   *Rule
		want   []rule.Finding
	}{
		"LiveResourcesSharingAnExternalNameFail": {
			reason: "Each of two live RDSInstances with external name prod-db is reported, naming the other.",
			rule: newCluster().managed(rdsGK, rdsGVR, false, stateSynced,
				mr("a", externalName("prod-db")), mr("b", externalName("prod-db")), mr("c", externalName("other"))).defaults(),
			want: []rule.Finding{
				collision(rdsRef("a"), "prod-db", "RDSInstance b"),
				collision(rdsRef("b"), "prod-db", "RDSInstance a"),
			},
		},
		"ADeletingResourceIsNoCollision": {
			reason: "Admission already keeps a new resource from colliding with one being deleted; the audit reports live pairs only.",
			rule: newCluster().managed(rdsGK, rdsGVR, false, stateSynced,
				mr("a", externalName("prod-db")), mr("b", externalName("prod-db"), deletingSince(time.Minute), finalizers(mrFinalizer))).defaults(),
		},
		"OtherKindsDoNotCollide": {
			reason: "An external name means one external resource only within a provider kind.",
			rule: newCluster().managed(rdsGK, rdsGVR, false, stateSynced, mr("a", externalName("db"))).
				managed(userGK, userGVR, false, stateSynced, mr("b", externalName("db"))).defaults(),
		},
		"ResourcesWithoutExternalNamesDoNotCollide": {
			reason: "No external name yet is not a shared one.",
			rule:   newCluster().managed(rdsGK, rdsGVR, false, stateSynced, mr("a"), mr("b")).defaults(),
		},
		"LegacyAndNamespacedGroupsOfOneProviderKindCollide": {
			reason: "The legacy cluster-scoped and the namespaced .m. group name the same external resources, as admission keys them.",
			rule: newCluster().managed(rdsGK, rdsGVR, false, stateSynced, mr("legacy", externalName("prod-db"))).
				managed(nsRDSGK, nsRDSGVR, true, stateSynced, mr("new", inNamespace("team"), externalName("prod-db"))).defaults(),
			want: []rule.Finding{
				collision(rdsRef("legacy"), "prod-db", "RDSInstance team/new in database.aws.m.example.org"),
				collision(corev1.ObjectReference{APIVersion: "database.aws.m.example.org/v1beta1", Kind: "RDSInstance", Namespace: "team", Name: "new"},
					"prod-db", "RDSInstance legacy in database.aws.example.org"),
			},
		},
		"AForbiddenKindIsSkipped": {
			reason: "A kind Steward may not list has no cache to report from; the rest is still audited.",
			rule: newCluster().managed(rdsGK, rdsGVR, false, stateForbidden).
				managed(userGK, userGVR, false, stateSynced, mr("a", externalName("u")), mr("b", externalName("u"))).defaults(),
			want: []rule.Finding{
				collision(corev1.ObjectReference{APIVersion: "postgresql.sql.example.org/v1alpha1", Kind: "Role", Name: "a"}, "u", "Role b"),
				collision(corev1.ObjectReference{APIVersion: "postgresql.sql.example.org/v1alpha1", Kind: "Role", Name: "b"}, "u", "Role a"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := audit(t, tc.rule)
			if diff := cmp.Diff(tc.want, got, ignoreMessages); diff != "" {
				t.Errorf("%s\nAudit(...) (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAuditMessages(t *testing.T) {
	got := audit(t, standard().rule(warnAfter(time.Minute)))
	want := "claimguard: XPostgreSQLInstance db-x7k2p has been deleting with Foreground propagation for more than 1m0s and is still held by 2 composed resources: " +
		`RDSInstance db-x7k2p-abcde (external name "db"; being deleted; finalizers: finalizer.managedresource.crossplane.io); ` +
		`Role db-x7k2p-fghij (external name "db-user"; finalizers: finalizer.managedresource.crossplane.io)` +
		". Its claim default/db, when deleted in Foreground, waits for it too, and a claim re-created in its place is refused until it is gone (kubectl get xpostgresqlinstances.database.example.org db-x7k2p)."
	if len(got) != 1 || got[0].Message != want {
		t.Errorf("foreground-deletion message:\n got %v\nwant %s", got, want)
	}
	// An hour later the report is the same: a finding's message does not
	// age, so the report is not written again every pass.
	later := standard().rule(warnAfter(time.Minute))
	later.now = func() time.Time { return now.Add(time.Hour) }
	if again := audit(t, later); len(again) != 1 || again[0].Message != want {
		t.Errorf("the foreground-deletion message changes with time:\n got %v\nwant %s", again, want)
	}
	got = audit(t, newCluster().managed(rdsGK, rdsGVR, false, stateSynced, mr("a", externalName("prod-db")), mr("b", externalName("prod-db"))).defaults())
	want = `claimguard: RDSInstance a has external name "prod-db", as RDSInstance b does: they manage the same external resource, each reconciling it toward its own spec, ` +
		"and deleting one deletes it from under the others. Keep one; delete the others with spec.deletionPolicy Orphan (or managementPolicies without Delete) so the external resource stays."
	if len(got) != 2 || got[0].Message != want {
		t.Errorf("external-name-collision message:\n got %v\nwant %s", got, want)
	}
}

func TestAuditNeedsSyncedCaches(t *testing.T) {
	notDiscovered := New(Config{})
	if _, err := notDiscovered.Audit(context.Background(), nil); err == nil {
		t.Error("Audit before the first discovery succeeded; it must fail so the previous findings stand")
	}
	syncing := newCluster().managed(rdsGK, rdsGVR, false, stateSyncing).defaults()
	if _, err := syncing.Audit(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "not synced") {
		t.Errorf("Audit with a cache still syncing: error %v, want one saying it has not synced", err)
	}
}

func TestForegroundDeletionWarnAfterConfig(t *testing.T) {
	var c Config
	c.Default()
	if got := c.foregroundDeletionWarnAfter(); got != 15*time.Minute {
		t.Errorf("default threshold = %s, want 15m", got)
	}
	for _, d := range []time.Duration{0, -time.Minute} {
		c := warnAfter(d)
		c.Default()
		if errs := c.Validate(field.NewPath("rules", "claimguard")); len(errs) != 1 || errs[0].Field != "rules.claimguard.foregroundDeletionWarnAfter" {
			t.Errorf("Validate(foregroundDeletionWarnAfter: %s) = %v, want one error on the field", d, errs)
		}
	}
	ok := warnAfter(time.Hour)
	ok.Default()
	if errs := ok.Validate(field.NewPath("rules", "claimguard")); len(errs) != 0 {
		t.Errorf("Validate(foregroundDeletionWarnAfter: 1h) = %v, want none", errs)
	}
}
