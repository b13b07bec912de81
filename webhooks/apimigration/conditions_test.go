package apimigration

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/celtest"
)

// TestMatchCondition evaluates the webhook's matchCondition as the API
// server does, for every kind and version of the table: it sends exactly
// the writes the rule acts on (deprecated or removed at any target) and
// keeps every write the rule would leave untouched in the API server.
func TestMatchCondition(t *testing.T) {
	wh := New(Config{}).Spec().Webhooks[0]
	if err := celtest.Compile(wh.MatchConditions); err != nil {
		t.Fatal(err)
	}
	for i := range apis {
		a := &apis[i]
		current := a.Preferred(NewestRelease())
		versions := append(a.Versions(), "v9")
		for _, v := range versions {
			acts := Classify(a.Group, a.Kind, v, MustParseRelease("9.0")).Status != Untouched
			reqs := map[string]*admissiontest.Request{
				"create": admissiontest.Create(gvr(a, v), a.Kind, obj(a, v, nil, spec1)),
				"update": admissiontest.Update(gvr(a, v), a.Kind, obj(a, v, nil, spec1), obj(a, v, nil, spec2)),
				// Converted by the API server to the current version: the
				// client's version still decides.
				"converted": admissiontest.Create(gvr(a, current), a.Kind, obj(a, current, nil, spec1)).
					RequestKind(schema.GroupVersionKind{Group: a.Group, Version: v, Kind: a.Kind}, a.Resource),
			}
			for how, req := range reqs {
				t.Run(fmt.Sprintf("%s/%s/%s", a.Kind, v, how), func(t *testing.T) {
					sent, err := celtest.Sent(wh.MatchConditions, req.Build())
					if err != nil {
						t.Fatal(err)
					}
					if sent != acts {
						t.Errorf("sent = %v, but the rule acts on this write: %v", sent, acts)
					}
				})
			}
		}
	}
}
