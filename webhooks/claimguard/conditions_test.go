package claimguard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/celtest"
)

func TestMatchConditionsCompile(t *testing.T) {
	celtest.CheckCompile(t, New(Config{}).Spec().Webhooks)
}

// TestManagedMatchConditions proves which composed resources never leave
// the API server, that what stays there is what the rule would allow
// untouched, and that objects lacking any field never make a condition err.
func TestManagedMatchConditions(t *testing.T) {
	conds := New(Config{}).Spec().Webhooks[1].MatchConditions
	rule := standard().defaults()
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	cases := map[string]struct {
		reason   string
		req      admission.Request
		wantSent bool
	}{
		"ExternalNameIsSent": {
			reason:   "the only requests the rule acts on",
			req:      admissiontest.Create(rdsGVR, "RDSInstance", req("db-n3w11-xyz", composedByPG("db-n3w11"), externalName("db"))).Build(),
			wantSent: true,
		},
		"NoAnnotationsStayInTheAPIServer": {
			reason: "the provider names the external resource after the (unique) object",
			req:    admissiontest.Create(rdsGVR, "RDSInstance", req("db-n3w11-xyz", composedByPG("db-n3w11"))).Build(),
		},
		"OtherAnnotationsStayInTheAPIServer": {
			reason: "annotations without an external name",
			req: admissiontest.Create(rdsGVR, "RDSInstance", req("db-n3w11-xyz", composedByPG("db-n3w11"), func(u *unstructured.Unstructured) {
				u.SetAnnotations(map[string]string{"crossplane.io/composition-resource-name": "db"})
			})).Build(),
		},
		"EmptyExternalNameStaysInTheAPIServer": {
			reason: "an empty external name is no name",
			req:    admissiontest.Create(rdsGVR, "RDSInstance", req("db-n3w11-xyz", composedByPG("db-n3w11"), externalName(""))).Build(),
		},
		"LeasesStayInTheAPIServer": {
			reason: "a wildcard rule must never reach Leases, whatever their labels",
			req:    admissiontest.Create(leases, "Lease", req("x", inNamespace("default"), composedByPG("db"), externalName("db"))).Build(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sent, err := celtest.Sent(conds, tc.req)
			if err != nil {
				t.Fatalf("%s: evaluating: %v", tc.reason, err)
			}
			if sent != tc.wantSent {
				t.Fatalf("%s: sent = %v, want %v", tc.reason, sent, tc.wantSent)
			}
			if !sent {
				if diff := cmp.Diff(true, handle(rule, tc.req).Allowed); diff != "" {
					t.Errorf("%s: a request the API server keeps would have been refused: -want, +got:\n%s", tc.reason, diff)
				}
			}
		})
	}
}
