package claimguard

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/celtest"
)

func withLabel(k, v string) mod {
	return func(u *unstructured.Unstructured) {
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		if v == "" {
			delete(l, k)
		} else {
			l[k] = v
		}
		u.SetLabels(l)
	}
}

// TestDeletingResourcesKeepTheirKeys proves that a resource being deleted
// keeps what claimguard finds it by, that anything else passes, and that
// the matchConditions send exactly the requests the rule refuses.
func TestDeletingResourcesKeepTheirKeys(t *testing.T) {
	r := standard().defaults()
	conds := New(Config{}).Spec().Webhooks[3].MatchConditions
	deleting := deletingSince(time.Minute)
	mr := func(mods ...mod) map[string]any {
		return req("db-q8w2z-abcde", append([]mod{composedByPG("db-q8w2z"), externalName("e2e-db")}, mods...)...)
	}
	cases := map[string]struct {
		reason   string
		old, new map[string]any
		want     string
	}{
		"ExternalNameChangedWhileDeleting": {
			reason: "an MR being deleted renamed would let an MR with its external name be created",
			old:    mr(deleting), new: mr(deleting, externalName("other")),
			want: `claimguard: RDSInstance db-q8w2z-abcde is being deleted; changing annotation crossplane.io/external-name from "e2e-db" to "other" is refused: claimguard finds resources being deleted by their claim, composite resource and external name, and refuses re-creating what would collide with them until they are gone. Wait until it is deleted.`,
		},
		"ClaimLabelRemovedWhileDeleting": {
			reason: "an XR being deleted without its claim label would let the claim be created again",
			old:    req("db-x7k2p", deleting, withLabel(labelClaimName, "db"), withLabel(labelComposite, "db-x7k2p")),
			new:    req("db-x7k2p", deleting, withLabel(labelComposite, "db-x7k2p")),
			want:   `claimguard: RDSInstance db-x7k2p is being deleted; changing label crossplane.io/claim-name from "db" to none is refused: claimguard finds resources being deleted by their claim, composite resource and external name, and refuses re-creating what would collide with them until they are gone. Wait until it is deleted.`,
		},
		"FinalizerRemovalWhileDeleting": {
			reason: "providers and Crossplane remove finalizers; that is how deletion ends",
			old:    mr(deleting), new: mr(deleting, func(u *unstructured.Unstructured) { u.SetFinalizers(nil) }),
		},
		"ExternalNameChangedOnALiveResource": {
			reason: "a live resource's keys are Crossplane's and the user's business",
			old:    mr(), new: mr(externalName("other")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			request := admissiontest.Update(rdsGVR, "RDSInstance", tc.old, tc.new).Build()
			got := handle(r, request)
			wantAllowed := tc.want == ""
			if got.Allowed != wantAllowed || (!wantAllowed && got.Result.Message != tc.want) {
				t.Errorf("%s\nallowed=%v message=%q; want allowed=%v message=%q", tc.reason, got.Allowed, got.Result.Message, wantAllowed, tc.want)
			}
			sent, err := celtest.Sent(conds, request)
			if err != nil {
				t.Fatalf("%s: evaluating the matchConditions: %v", tc.reason, err)
			}
			if diff := cmp.Diff(!wantAllowed, sent); diff != "" {
				t.Errorf("%s: the matchConditions must send exactly what the rule refuses: -want, +got sent:\n%s", tc.reason, diff)
			}
		})
	}
}
